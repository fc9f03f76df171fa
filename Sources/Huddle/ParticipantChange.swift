import HuddleProtocol
import HuddleSession

/// One change to a session's participants, with its reason; ``GroupSession/participantChanges`` yields them in
/// order.
public enum ParticipantChange: Sendable, Hashable {
    /// The participant became active (it joined, or came back after being unreachable).
    case joined(Participant)
    /// The participant stopped being active.
    case left(Participant, reason: DepartureReason)
    /// Nothing has been heard from an active participant for about 2 seconds, although keepalives ask it to answer
    /// every second (both twice and once ``HuddleNode/Configuration/keepaliveInterval``, longer on a slow path): it
    /// may have crashed, lost its network, or be stalled. It stays active (messages to it wait and
    /// are retransmitted), and one of two changes follows: ``responsive(_:)`` when it is heard again, or
    /// ``left(_:reason:)`` with ``DepartureReason/unreachable`` when its connection times out (about 15 seconds of
    /// silence). An app can show it as reconnecting, like WebRTC's "disconnected" state.
    case unresponsive(Participant)
    /// A participant reported ``unresponsive(_:)`` was heard from again.
    case responsive(Participant)

    /// Why a participant stopped being active.
    public enum DepartureReason: String, Sendable, Hashable {
        /// It left (or ended the session).
        case left
        /// Its connection was lost without a goodbye (crash, network failure: detected by the idle timeout), or
        /// could not be set up.
        case unreachable
        /// It crashed and rejoined: the participant it was lost its state, and a `.joined` for it follows.
        case restarted
        /// A member removed it (``GroupSession/remove(_:)``): it cannot come back with any invitation it knew.
        ///
        /// Final, unlike `.unreachable`: a participant already reported unreachable (its connection closed before
        /// the removal arrived here, as a removed node closes its connections when told) is reported again with
        /// this reason, so an application always learns that it will not come back.
        case removed
    }
}

extension ParticipantChange.DepartureReason {
    init(_ reason: MembershipAction.DepartureReason) {
        switch reason {
        case .left: self = .left
        case .unreachable: self = .unreachable
        case .restarted: self = .restarted
        case .removed: self = .removed
        }
    }
}
