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
        /// The participant was removed from the session (``GroupSession/remove(_:)``), or this node was, before the
        /// participant confirmed delivery.
        case removed
    }

    /// The participant the messages were for.
    public let participant: Participant
    /// How many messages.
    public let count: Int
    /// The numbers of their receipts (``MessageReceipt/id``), ascending: exactly the messages this report covers.
    /// A message is reported at most once per recipient.
    public let receipts: [UInt64]
    /// Why.
    public let reason: Reason

    /// A report of the messages whose receipts are numbered `receipts` (`count` of them) for `participant` that
    /// failed for `reason`.
    public init(participant: Participant, count: Int, receipts: [UInt64] = [], reason: Reason) {
        self.participant = participant
        self.count = count
        self.receipts = receipts
        self.reason = reason
    }

    /// Whether this report covers the message `receipt` names.
    public func covers(_ receipt: MessageReceipt) -> Bool {
        receipt.recipients.contains(participant) && receipts.contains(receipt.id)
    }

    public var description: String {
        let range =
            switch (receipts.first, receipts.last) {
            case (let first?, let last?) where first == last: " (message \(first))"
            case (let first?, let last?): " (messages \(first)-\(last))"
            default: ""
            }
        return "\(count) message\(count == 1 ? "" : "s")\(range) not delivered to \(participant): \(reason.rawValue)"
    }
}

extension DeliveryFailure.Reason {
    init(_ reason: DeliveryFailureReason) {
        switch reason {
        case .left: self = .left
        case .unreachable: self = .unreachable
        case .restarted: self = .restarted
        case .sessionEnded: self = .sessionEnded
        case .removed: self = .removed
        }
    }
}
