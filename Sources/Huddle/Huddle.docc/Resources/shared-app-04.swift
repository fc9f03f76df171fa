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

        let session = try await node.activate(SketchActivity(title: arguments.first ?? "untitled"))
        try await session.join()
        print("share this ticket:")
        print(try await session.makeInvitation(validFor: .seconds(3600)).ticket)
        await node.shutdown()
    }
}
