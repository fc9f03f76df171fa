import HuddleProtocol
import HuddleSession

/// Reliable messenger messages that will never be confirmed delivered to one participant, and why: the other half of
/// the `.reliable` promise. Every message a ``Messenger`` accepted for a participant is either delivered to it exactly
/// once, in order, or counted in one of these reports; ``GroupSession/deliveryFailures`` streams them.
///
/// Like Apple's `GroupSessionMessenger`, a message reaches the participants active when it was sent (the roster as
/// ``GroupSession/activeParticipants`` shows it, whether or not a connection to each is up yet); a participant that
/// leaves or becomes unreachable before it confirms delivery may miss it. Huddle reports each such miss here.
public struct DeliveryFailure: Sendable, Hashable, CustomStringConvertible {
    /// Why the messages failed.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// The participant left before it confirmed delivery (it may have received some of the messages just before
        /// it left, whose acknowledgements did not arrive).
        case left
        /// The participant became unreachable (its connection timed out, failed or could not be set up) before it
        /// confirmed delivery. It may have received some of the messages (an acknowledgement can be lost), never
        /// twice.
        case unreachable
        /// The participant crashed and rejoined; the messages were for the participant it was before.
        case restarted
        /// This node left the session, or the session ended, before the participant confirmed delivery.
        case sessionEnded
    }

    /// The participant the messages were for.
    public let participant: Participant
    /// How many messages.
    public let count: Int
    /// Why.
    public let reason: Reason

    /// A report of `count` messages for `participant` that failed for `reason`.
    public init(participant: Participant, count: Int, reason: Reason) {
        self.participant = participant
        self.count = count
        self.reason = reason
    }

    public var description: String {
        "\(count) message\(count == 1 ? "" : "s") not delivered to \(participant): \(reason.rawValue)"
    }
}

extension DeliveryFailure.Reason {
    init(_ reason: DeliveryFailureReason) {
        switch reason {
        case .left: self = .left
        case .unreachable: self = .unreachable
        case .restarted: self = .restarted
        case .sessionEnded: self = .sessionEnded
        }
    }
}
