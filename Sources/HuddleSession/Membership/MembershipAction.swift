import HuddleCrypto
import HuddleProtocol

/// What ``SessionMembership`` asks its driver to do or tells it happened. The driver applies endpoint actions to
/// its ``Endpoint`` in order and turns the rest into API events.
public enum MembershipAction: Sendable {
    /// Send `bytes` (an encoded ``MembershipMessage``) reliably on ``MembershipMessage/channel`` to `peer`.
    case send([UInt8], to: X25519PublicKey)
    /// Authorise (or re-key the credentials of) a peer: ``Endpoint/addPeer(_:)``.
    case authorize(PeerCredentials)
    /// Forget a peer that left: ``Endpoint/removePeer(_:now:)``.
    case forget(X25519PublicKey)
    /// Open a connection to `peer`, trying `addresses` (the first is the best known).
    case dial(X25519PublicKey, addresses: [NetworkAddress])
    /// Accept joiners under an invitation: ``Endpoint/addAdmission(_:credentials:)``.
    case openAdmission(AdmissionID, AdmissionCredentials)
    /// Stop accepting joiners under an invitation.
    case closeAdmission(AdmissionID)
    /// The local node is now a member (a joiner received its WELCOME).
    case joined
    /// A member became active: the roster names it (its connection may still be being set up), or it reconnected
    /// after it had become unreachable.
    case participantJoined(MemberRecord)
    /// A member is no longer active: it left, or its connection was lost.
    case participantLeft(MemberRecord, DepartureReason)
    /// The shared activity changed (locally or by another member).
    case activityChanged(ActivityRecord)
    /// The session ended for everyone; `by` is the member who ended it (`nil`: this node).
    case ended(by: MemberRecord?)
    /// Joining failed.
    case joinFailed(JoinFailureCause)
    /// A member removed the local node from the session (`by`: that member's record, when this node knows it). The
    /// driver closes its connections; the membership takes no further part.
    case removed(by: MemberRecord?)
    /// The sponsor said this joiner's request waits for a member's answer (ask to join).
    case waitingForApproval
    /// A joiner asks to join under an ask-to-join invitation (its record as its request named it): a member answers
    /// with ``SessionMembership/answerJoinRequest(_:admit:)`` within ``ProtocolLimits/joinApprovalTimeout``.
    case joinRequested(MemberRecord)
    /// An ask-to-join request was settled here: answered (by this node or another member) or expired.
    case joinRequestSettled(MemberRecord, JoinRequestOutcome)
    /// A departure calls for a new admission key drawn here: the driver draws 32 random bytes and calls
    /// ``SessionMembership/rotateAdmission(secret:)`` (the membership holds no random generator).
    case rotateAdmission
    /// A member left while the admission was at `epoch`, and its key must move on (the leaver holds it): this node is
    /// `place`-th in line to draw the next one (0: at once). The driver waits
    /// `place` × ``ProtocolLimits/departureRotationStagger`` and then, unless the admission moved past `epoch`
    /// meanwhile, draws 32 random bytes and calls ``SessionMembership/rotateAdmission(secret:)``.
    case rotateAdmissionAfterDeparture(place: Int, epoch: UInt64)

    /// Why a participant stopped being active.
    public enum DepartureReason: Sendable, Hashable {
        /// It announced that it leaves.
        case left
        /// Its connection closed without an announcement (crash, partition, idle timeout), or could not be
        /// established.
        case unreachable
        /// It crashed and rejoined (the roster announced it again with a larger epoch): the participant it was lost
        /// its state; the new one is reported as joined right after.
        case restarted
        /// A member removed it (`by`: the remover's signing key).
        case removed(by: Ed25519PublicKey)
    }
}
