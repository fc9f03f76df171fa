import Foundation
import Huddle

/// Connects the canvas to the session, the way Apple's sample connects its `Canvas` to a `GroupSession`: strokes
/// through a reliable messenger, pointers through an unreliable one, images through the journal, and the whole
/// canvas sent to each newcomer.
final class Coordinator: Sendable {
    let session: GroupSession<DrawTogether>
    let canvas: Canvas
    let messenger: Messenger
    let pointers: Messenger
    let journal: Journal

    init(session: GroupSession<DrawTogether>, canvas: Canvas) {
        self.session = session
        self.canvas = canvas
        messenger = Messenger(session: session)
        pointers = Messenger(session: session, deliveryMode: .unreliable)
        journal = Journal(session: session)
    }

    /// Follows the session until it ends.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in
                for await (upsert, _) in messenger.messages(of: UpsertStroke.self) { await canvas.apply(upsert) }
            }
            group.addTask { [self] in
                for await (catchUp, _) in messenger.messages(of: CanvasMessage.self) {
                    await canvas.merge(catchUp.strokes)
                }
            }
            group.addTask { [self] in
                for await (moved, context) in pointers.messages(of: CursorMoved.self) {
                    await canvas.cursor(of: context.source, at: moved.point)
                }
            }
            group.addTask { [self] in
                for await participants in session.participantUpdates { await canvas.setPeople(participants) }
            }
            // Late joiners: every member sends a newcomer the canvas (merging copies is harmless). Images need no
            // catch-up: the journal hands every attachment to every member, also after its author left.
            group.addTask { [self] in
                for await change in session.participantChanges {
                    guard case .joined(let newcomer) = change else { continue }
                    let strokes = await canvas.allStrokes
                    // In parts, so no message comes near the 256 KiB message limit.
                    for start in stride(from: 0, to: strokes.count, by: 50) {
                        let part = Array(strokes[start..<min(start + 50, strokes.count)])
                        _ = try? await messenger.send(CanvasMessage(strokes: part), to: .only([newcomer]))
                    }
                }
            }
            group.addTask { [self] in
                var seen: Set<UUID> = []
                for await attachments in journal.attachmentUpdates {
                    for attachment in attachments where seen.insert(attachment.id).inserted {
                        Task { await self.show(attachment) }
                    }
                }
            }
        }
    }

    /// Puts an attachment on the canvas once its bytes are verified.
    private func show(_ attachment: Journal.Attachment) async {
        guard let placement = try? attachment.loadMetadata(of: ImagePlacement.self),
            let data = try? await attachment.load()
        else { return }
        await canvas.add(
            Canvas.Image(
                id: attachment.id, point: placement.point, mimeType: placement.mimeType,
                data: data.base64EncodedString()))
    }

    /// A command from a page.
    func handle(_ text: String) async {
        guard let command = try? JSONDecoder().decode(PageCommand.self, from: Data(text.utf8)) else { return }
        switch command.type {
        case "stroke":
            guard let id = command.id, let point = command.point else { return }
            let upsert = UpsertStroke(id: id, color: session.localParticipant.color, point: point)
            await canvas.apply(upsert)
            _ = try? await messenger.send(upsert)
        case "cursor":
            guard let point = command.point else { return }
            _ = try? await pointers.send(CursorMoved(point: point))
        case "image":
            guard let point = command.point, let mimeType = command.mimeType,
                let data = command.data.flatMap({ Data(base64Encoded: $0) })
            else { return }
            // Shown here too once the journal lists it (as on every other member).
            _ = try? await journal.add(data, metadata: ImagePlacement(point: point, mimeType: mimeType))
        default:
            return
        }
    }
}

/// What a page sends: `{"type":"stroke","id":UUID,"point":{"x":..,"y":..}}`, `{"type":"cursor","point":..}` or
/// `{"type":"image","point":..,"mimeType":"image/png","data":BASE64}`.
struct PageCommand: Decodable {
    var type: String
    var id: UUID?
    var point: Point?
    var mimeType: String?
    var data: String?
}
