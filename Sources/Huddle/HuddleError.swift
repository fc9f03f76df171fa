import Foundation
import HuddleTransport

/// What can go wrong using Huddle's public API. Each case's description says what happened and what to do.
public enum HuddleError: Error, Sendable, CustomStringConvertible {
    /// The node already takes part in a session (one session per node; run another node for a second one).
    case alreadyInSession
    /// The operation needs a joined session.
    case notJoined
    /// The session is over; the reason says why.
    case invalidated(InvalidationReason)
    /// The ticket expired at the given date.
    case invitationExpired(Date)
    /// No member named in the ticket answered within the join timeout.
    case joinTimedOut(Duration)
    /// Joining failed for the given reason.
    case joinFailed(String)
    /// The session's activity is of another kind than the one asked for.
    case activityMismatch(expected: String, found: String)
    /// An encoded message exceeds the 256 KiB limit.
    case messageTooLarge(size: Int, limit: Int)
    /// An unreliable message exceeds what fits in one datagram.
    case datagramTooLarge(size: Int, limit: Int)
    /// The recipient is not an active participant.
    case notAParticipant(Participant)
    /// A value could not be encoded or decoded.
    case coding(String)
    /// The identity file could not be used.
    case identity(String)
    /// The network layer failed.
    case transport(TransportError)

    public var description: String {
        switch self {
        case .alreadyInSession:
            "this node already takes part in a session; leave it first, or start another node"
        case .notJoined: "the session is not joined yet; call join() first"
        case .invalidated(let reason): "the session is over: \(reason)"
        case .invitationExpired(let date): "the invitation expired at \(date); ask a member for a new one"
        case .joinTimedOut(let timeout):
            "no member named in the invitation answered within \(timeout); check the addresses and that a member runs"
        case .joinFailed(let reason): "joining failed: \(reason)"
        case .activityMismatch(let expected, let found):
            "the session's activity is \"\(found)\", not \"\(expected)\""
        case .messageTooLarge(let size, let limit):
            "the message is \(size) bytes; the limit is \(limit) (send large data with the journal)"
        case .datagramTooLarge(let size, let limit):
            "an unreliable message of \(size) bytes does not fit one datagram (limit \(limit)); use .reliable"
        case .notAParticipant(let participant): "\(participant) is not an active participant"
        case .coding(let detail): "encoding failed: \(detail)"
        case .identity(let detail): "identity: \(detail)"
        case .transport(let error): "network: \(error)"
        }
    }
}
