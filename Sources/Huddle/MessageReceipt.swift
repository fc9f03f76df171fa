import HuddleProtocol

/// What ``Messenger/send(_:to:)-(Message,_)`` returns once it accepted a message: the message's identity in this
/// session, to match against ``DeliveryFailure/receipts`` or to await with ``Messenger/outcome(of:)``.
public struct MessageReceipt: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The message's number: this node's sends in one session are numbered 1, 2, 3, ... in the order `send`
    /// accepted them (reliable and unreliable alike, across every ``Messenger`` of the session).
    public let id: UInt64
    /// The session it was sent in.
    public let session: SessionID
    /// The participants it was sent to (this node left out).
    public let recipients: Set<Participant>
    /// How it travels: only a reliable message has its delivery confirmed.
    public let deliveryMode: Messenger.DeliveryMode

    public static func < (lhs: MessageReceipt, rhs: MessageReceipt) -> Bool { lhs.id < rhs.id }

    public var description: String { "message \(id)" }
}

/// How a message sent with a ``MessageReceipt`` ended, once it has (``Messenger/outcome(of:)``).
public enum DeliveryOutcome: Sendable, Hashable {
    /// Every recipient confirmed it: each has delivered it to its session, exactly once and in order.
    case delivered
    /// Some recipients will not confirm it, for the reasons given (the same reports as
    /// ``GroupSession/deliveryFailures``); every other recipient confirmed it.
    case failed([Participant: DeliveryFailure.Reason])
    /// An unreliable message: sent, and never confirmed by anyone.
    case unconfirmed
}
