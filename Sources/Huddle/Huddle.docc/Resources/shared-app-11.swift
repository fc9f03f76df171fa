import Foundation
import Huddle

/// The activity: one shared sketch. Every member holds the same copy.
struct SketchActivity: GroupActivity {
    static let activityIdentifier = "com.example.sketch-together"
    var title: String
    var metadata: GroupActivityMetadata {
        GroupActivityMetadata(title: "Sketch: \(title)", type: .createTogether)
    }
}

/// A point on the canvas.
struct Point: Codable, Sendable, Hashable {
    var x: Double
    var y: Double
}

/// One stroke: what a member sends when it draws.
struct Stroke: Codable, Sendable, MessageTypeNaming {
    static let messageTypeName = "com.example.sketch.stroke"
    var id: UUID
    var points: [Point]
}

/// The whole canvas: what members send a newcomer so it can catch up.
struct CanvasMessage: Codable, Sendable, MessageTypeNaming {
    static let messageTypeName = "com.example.sketch.canvas"
    var strokes: [Stroke]
}

/// What an attachment is: the metadata stored with a shared background image.
struct Background: Codable, Sendable {
    var fileName: String
}

/// The strokes this member knows, in the order it learned them. Adding a stroke it already has does nothing, so
/// catch-up messages from several members merge into one canvas.
actor Canvas {
    private(set) var strokes: [Stroke] = []
    private var known: Set<UUID> = []

    func add(_ stroke: Stroke) -> Bool {
        guard known.insert(stroke.id).inserted else { return false }
        strokes.append(stroke)
        return true
    }
}

@main
struct SketchApp {
    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        var random = SystemRandomGenerator()
        let identity = Identity(using: &random)
        let name = ProcessInfo.processInfo.environment["USER"] ?? "sketcher"
        let node = try await HuddleNode.start(.init(identity: identity, name: name))
        print("node \(node.fingerprint) on \(node.localAddress)")

        let session: GroupSession<SketchActivity>
        if arguments.count == 2, arguments[0] == "join" {
            let invitation = try Invitation(parsing: arguments[1])
            session = try await node.join(invitation, as: SketchActivity.self)
            print("joined \"\(session.activity.title)\" with \(session.activeParticipants.count) participants")
        } else {
            session = try await node.activate(SketchActivity(title: arguments.first ?? "untitled"))
            try await session.join()
            print("share this ticket:")
            print(try await session.makeInvitation(validFor: .seconds(3600)).ticket)
        }

        let canvas = Canvas()
        let messenger = Messenger(session: session)
        let journal = Journal(session: session)

        // Strokes other members draw.
        Task {
            for await (stroke, context) in messenger.messages(of: Stroke.self) {
                if await canvas.add(stroke) {
                    print("\(context.source.name) drew \(stroke.points.count) points")
                }
            }
        }

        // The canvas a member sends when this node joins (every member already there sends one).
        Task {
            for await (catchUp, context) in messenger.messages(of: CanvasMessage.self) {
                var added = 0
                for stroke in catchUp.strokes {
                    if await canvas.add(stroke) { added += 1 }
                }
                print("caught up from \(context.source.name): \(added) new strokes")
            }
        }

        // Newcomers get the whole canvas; departures are reported with their reason. The stream is made before the
        // task starts, so no change falls between the two.
        let changes = session.participantChanges
        Task {
            for await change in changes {
                switch change {
                case .joined(let newcomer):
                    print("+ \(newcomer.name) joined")
                    let strokes = await canvas.strokes
                    do {
                        try await messenger.send(CanvasMessage(strokes: strokes), to: .only([newcomer]))
                    } catch {
                        print("catch-up for \(newcomer.name) not sent: \(error)")
                    }
                case .left(let participant, let reason):
                    print("- \(participant.name) left (\(reason.rawValue))")
                case .unresponsive(let participant):
                    print("? \(participant.name) is not answering")
                case .responsive(let participant):
                    print("+ \(participant.name) is answering again")
                }
            }
        }

        // Reliable messages that will not arrive, and messages that arrived but nothing reads.
        let failures = session.deliveryFailures
        let drops = session.messageDrops
        Task {
            for await failure in failures {
                print("! \(failure.count) message(s) not delivered to \(failure.participant.name): \(failure.reason)")
            }
        }
        Task {
            for await drop in drops {
                print("! \(drop)")
            }
        }

        print("type points to draw (1,2 3,4 5,6) or /share PATH; the node runs until the end of input (Control-D)")
        for await line in standardInputLines() {
            do {
                if line.hasPrefix("/share ") {
                    let url = URL(fileURLWithPath: String(line.dropFirst("/share ".count)))
                    let attachment = try await journal.add(
                        contentsOf: url, metadata: Background(fileName: url.lastPathComponent))
                    print("shared \(attachment.id) (\(attachment.size) bytes)")
                } else if let points = parsePoints(line) {
                    let stroke = Stroke(id: UUID(), points: points)
                    _ = await canvas.add(stroke)
                    try await messenger.send(stroke)
                } else {
                    print("not understood: \(line)")
                }
            } catch {
                print("error: \(error)")
            }
        }
        await node.shutdown()
    }

    /// Lines typed on standard input, read on a thread of their own (`readLine()` blocks).
    static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }

    /// `1,2 3,4 5,6` as points; `nil` when the line holds none.
    static func parsePoints(_ line: String) -> [Point]? {
        let points = line.split(separator: " ").compactMap { pair -> Point? in
            let parts = pair.split(separator: ",")
            guard parts.count == 2, let x = Double(parts[0]), let y = Double(parts[1]) else { return nil }
            return Point(x: x, y: y)
        }
        return points.isEmpty ? nil : points
    }
}
