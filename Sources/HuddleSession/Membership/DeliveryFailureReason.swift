import HuddleProtocol

/// Why reliable messages accepted for a member will never be confirmed delivered to it.
///
/// A message is confirmed when the member's node acknowledged all of it. A report says the sender cannot confirm
/// delivery; it does not prove the member never received the message: an acknowledgement can be lost on its way back,
/// or a member can receive a message and leave (or crash) before its acknowledgement goes out. A reported message is
/// never delivered twice, and never after the report to a later incarnation of the member.
public enum DeliveryFailureReason: String, Sendable, Hashable {
    /// The member left the session before it confirmed delivery.
    case left
    /// The member became unreachable (its connection timed out or could not be established, or it was closed) before
    /// it confirmed delivery.
    case unreachable
    /// The member crashed and rejoined: the messages were addressed to the participant it was before, which lost
    /// its state.
    case restarted
    /// This node left the session, or the session ended, before the member confirmed delivery.
    case sessionEnded
    /// The member was removed from the session, or this node was, before the member confirmed delivery.
    case removed
}
