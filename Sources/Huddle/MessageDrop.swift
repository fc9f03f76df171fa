/// Messages a participant sent to this node that arrived intact but that no application code will see, and why: the
/// receiving side's counterpart of ``DeliveryFailure``. ``GroupSession/messageDrops`` streams them, so a message is
/// never lost without the application being able to know.
///
/// A message whose type no ``Messenger`` subscription matches waits (up to 1,024 of them) for a subscription to
/// come; while that buffer is full the session holds its senders back for up to 3 seconds, once per subscription
/// change, and after that such messages are dropped and reported here.
public struct MessageDrop: Sendable, Hashable, CustomStringConvertible {
    /// Why the messages were dropped.
    public enum Reason: String, Sendable, Hashable {
        /// Nobody subscribed to their type, and 1,024 such messages were already waiting for a subscription.
        case noSubscriber = "no-subscriber"
        /// They were not messenger envelopes this node can read (damaged, of a newer envelope version, or on a
        /// channel a newer version added).
        case undecodable
        /// They carried the type name a `messages(of:)` stream reads, but their JSON did not decode as that type (a
        /// version of the type with another shape: keep old fields decodable, see ``MessageTypeNaming``).
        case typeMismatch = "type-mismatch"
    }

    /// The participant that sent them.
    public let participant: Participant
    /// Their type name (as ``Messenger`` names a Codable type, or the raw-bytes marker), `nil` when undecodable.
    public let typeName: String?
    /// Whether they were sent reliably.
    public let reliable: Bool
    /// How many messages.
    public let count: Int
    /// Why.
    public let reason: Reason

    /// A report of `count` messages from `participant` dropped for `reason`.
    public init(participant: Participant, typeName: String?, reliable: Bool, count: Int, reason: Reason) {
        self.participant = participant
        self.typeName = typeName
        self.reliable = reliable
        self.count = count
        self.reason = reason
    }

    public var description: String {
        let what = "\(count) \(reliable ? "reliable" : "unreliable") message\(count == 1 ? "" : "s")"
        return "\(what) of type \(typeName ?? "?") from \(participant) dropped: \(reason.rawValue)"
    }

    /// Whether `other` reports the same kind of drop (so the two can be told as one, with the counts added).
    func isSameKind(as other: MessageDrop) -> Bool {
        participant == other.participant && typeName == other.typeName && reliable == other.reliable
            && reason == other.reason
    }

    /// This report with `more` messages added.
    func adding(_ more: Int) -> MessageDrop {
        MessageDrop(
            participant: participant, typeName: typeName, reliable: reliable, count: count + more, reason: reason)
    }
}
