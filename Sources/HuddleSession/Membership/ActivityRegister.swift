import HuddleCrypto
import HuddleProtocol

/// The session's shared activity as one member holds it: a last-writer-wins register (by Lamport clock, then
/// author) and the forward a value received from a member still owes the others.
///
/// A sub-machine of ``SessionMembership``, which keeps the clock (shared with member epochs) and sends what this
/// register decides. Forwarding: a value that is new here is passed on to every other member (the author's own
/// broadcast can die with a connection that times out during a partition), at most once per
/// ``ProtocolLimits/activityForwardInterval`` (the session core's pace), carrying the value current when it goes out,
/// so a value superseded meanwhile costs no forward.
struct ActivityRegister: Sendable {
    /// The current value, if any was ever set.
    private(set) var current: ActivityRecord?
    /// Whether a value received from a member waits to be forwarded.
    private(set) var forwardPending = false
    /// The member the pending value came from (it is not sent back there).
    private(set) var forwardSource: X25519PublicKey?
    /// Forwards sent.
    private(set) var forwards = 0
    /// Values adopted from members that were superseded before their forward went out, so never forwarded.
    private(set) var coalesced = 0

    /// Takes `record` if it supersedes the current value; one received from member `sender` then waits to be
    /// forwarded. Returns whether it was taken.
    mutating func adopt(_ record: ActivityRecord, from sender: X25519PublicKey?) -> Bool {
        if let current, !record.supersedes(current) { return false }
        current = record
        guard let sender else { return true }
        if forwardPending { coalesced += 1 }
        forwardPending = true
        forwardSource = sender
        return true
    }

    /// Sets this member's own value: its broadcast reaches everyone a pending forward would have, so that forward is
    /// dropped.
    mutating func set(_ record: ActivityRecord) {
        current = record
        if forwardPending { coalesced += 1 }
        forwardPending = false
    }

    /// The value to forward now and the member not to send it to, or `nil` when nothing waits; counts the forward
    /// when `sending` (a node that is not a member only clears the pending forward).
    mutating func takeForward(sending: Bool) -> (record: ActivityRecord, except: X25519PublicKey?)? {
        guard forwardPending else { return nil }
        forwardPending = false
        guard sending, let current else { return nil }
        forwards += 1
        return (current, forwardSource)
    }
}
