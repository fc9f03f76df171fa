import HuddleProtocol
import HuddleSession

/// One change to a session's active participants, with its reason; ``GroupSession/participantChanges`` yields them
/// in order.
public enum ParticipantChange: Sendable, Hashable {
    /// The participant became active (it joined, or came back after being unreachable).
    case joined(Participant)
    /// The participant stopped being active.
    case left(Participant, reason: DepartureReason)

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
