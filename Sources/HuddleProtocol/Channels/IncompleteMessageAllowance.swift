/// The sender's side of the peer's incomplete-message limit, shared by all ``SendChannel``s of one connection.
///
/// A receiver refuses a 257th incomplete message per connection (``ProtocolLimits/maxIncompleteMessagesPerConnection``,
/// ``ReassemblyBudget``). A message can only be incomplete at the receiver if it was sent in more than one fragment, so
/// a ``SendChannel`` takes a slot here before it sends the first fragment that does not carry its whole message, and
/// gives it back when every byte of that message is acknowledged (the receiver then holds it complete). The number of
/// slots in use therefore never falls below the number of the peer's incomplete messages from this sender, and an
/// honest sender that shares one allowance across its channels never triggers
/// ``ProtocolViolation/reassemblyBudgetExceeded(limit:)``.
///
/// Messages sent whole in one fragment never take a slot.
public struct IncompleteMessageAllowance: Sendable {
    /// The most messages that may be in pieces at once (default
    /// ``ProtocolLimits/maxIncompleteMessagesPerConnection``; must not exceed the peer's limit).
    public let limit: Int
    /// Messages sent in more than one fragment and not yet acknowledged in full.
    public private(set) var inUse = 0

    /// An allowance with no slot in use.
    public init(limit: Int = ProtocolLimits.maxIncompleteMessagesPerConnection) {
        precondition(limit >= 0, "negative limit")
        self.limit = limit
    }

    /// Whether one more message may be sent in pieces.
    public var hasRoom: Bool { inUse < limit }

    /// Takes a slot if one is free.
    mutating func take() -> Bool {
        guard inUse < limit else { return false }
        inUse += 1
        return true
    }

    /// Returns a slot taken with ``take()``.
    mutating func giveBack() {
        precondition(inUse > 0, "no slot in use")
        inUse -= 1
    }
}
