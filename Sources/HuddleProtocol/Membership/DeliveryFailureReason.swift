/// Why reliable messages accepted for a member will never be confirmed delivered to it.
///
/// A message is confirmed when the member's node acknowledged all of it. Reasons other than ``left`` and
/// ``sessionEnded`` say nothing about whether the member received some of the messages before the failure: an
/// acknowledgement may have been lost on its way back (at most once, never twice).
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
}
