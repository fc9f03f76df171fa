import Huddle

/// The activity `huddle host` starts: a chat room.
struct ChatActivity: GroupActivity {
    static let activityIdentifier = "org.huddle.chat"

    /// What the room is about.
    var topic: String

    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: topic, type: .generic) }
}

/// One chat line.
struct ChatLine: Codable, Sendable {
    var text: String
}
