import Foundation
import Huddle

/// The canvas as this participant sees it, and the browser pages showing it: every change is applied here and sent
/// to each connected page as one JSON update (see `PageUpdate`).
actor Canvas {
    /// An image on the canvas (a journal attachment, loaded).
    struct Image: Codable, Sendable {
        var id: UUID
        var point: Point
        var mimeType: String
        /// The image bytes, base64.
        var data: String
    }

    /// A participant, as the page shows it.
    struct Person: Codable, Sendable, Equatable {
        var id: String
        var name: String
        var color: String

        init(_ participant: Participant) {
            id = participant.id
            name = participant.name
            color = participant.color
        }
    }

    let me: Person
    let ticket: String
    private var strokes: [UUID: Stroke] = [:]
    private var strokeOrder: [UUID] = []
    private var images: [UUID: Image] = [:]
    private var people: [Person] = []
    private var pages: [UUID: AsyncStream<String>.Continuation] = [:]

    init(me: Participant, ticket: String) {
        self.me = Person(me)
        self.ticket = ticket
    }

    /// Every stroke, oldest first.
    var allStrokes: [Stroke] { strokeOrder.compactMap { strokes[$0] } }

    /// A new page: the whole canvas first, then every change.
    func connect() -> (id: UUID, updates: AsyncStream<String>) {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = UUID()
        pages[id] = continuation
        continuation.yield(
            PageUpdate.snapshot(
                .init(me: me, ticket: ticket, strokes: allStrokes, images: Array(images.values), people: people)
            ).json)
        return (id, stream)
    }

    func disconnect(_ id: UUID) {
        pages.removeValue(forKey: id)?.finish()
    }

    /// Adds `upsert.point` to its stroke (creating it).
    func apply(_ upsert: UpsertStroke) {
        if strokes[upsert.id] == nil {
            strokes[upsert.id] = Stroke(id: upsert.id, color: upsert.color, points: [])
            strokeOrder.append(upsert.id)
        }
        strokes[upsert.id]!.points.append(upsert.point)
        send(.stroke(strokes[upsert.id]!))
    }

    /// Takes a catch-up: strokes it has not seen, or has fewer points of.
    func merge(_ received: [Stroke]) {
        for stroke in received where stroke.points.count > (strokes[stroke.id]?.points.count ?? -1) {
            if strokes[stroke.id] == nil { strokeOrder.append(stroke.id) }
            strokes[stroke.id] = stroke
            send(.stroke(stroke))
        }
    }

    func add(_ image: Image) {
        guard images[image.id] == nil else { return }
        images[image.id] = image
        send(.image(image))
    }

    func setPeople(_ participants: Set<Participant>) {
        let sorted = participants.map(Person.init).sorted { $0.name < $1.name }
        guard sorted != people else { return }
        people = sorted
        send(.people(sorted))
    }

    func cursor(of participant: Participant, at point: Point) {
        send(.cursor(.init(person: Person(participant), point: point)))
    }

    private func send(_ update: PageUpdate) {
        let json = update.json
        for page in pages.values { page.yield(json) }
    }
}

/// What the server tells a page, as JSON with a `type`.
enum PageUpdate: Encodable {
    struct Snapshot: Encodable {
        var me: Canvas.Person
        var ticket: String
        var strokes: [Stroke]
        var images: [Canvas.Image]
        var people: [Canvas.Person]
    }

    struct Cursor: Encodable {
        var person: Canvas.Person
        var point: Point
    }

    case snapshot(Snapshot)
    case stroke(Stroke)
    case image(Canvas.Image)
    case people([Canvas.Person])
    case cursor(Cursor)

    private enum Key: String, CodingKey { case type, body }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .snapshot(let body):
            try container.encode("snapshot", forKey: .type); try container.encode(body, forKey: .body)
        case .stroke(let body): try container.encode("stroke", forKey: .type); try container.encode(body, forKey: .body)
        case .image(let body): try container.encode("image", forKey: .type); try container.encode(body, forKey: .body)
        case .people(let body): try container.encode("people", forKey: .type); try container.encode(body, forKey: .body)
        case .cursor(let body): try container.encode("cursor", forKey: .type); try container.encode(body, forKey: .body)
        }
    }

    var json: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }
}
