import HuddleProtocol

/// Why a membership message from an authenticated peer was refused. The connection to that peer is closed with
/// `CloseCode.protocolViolation` and this reason; nothing else is affected.
public enum MembershipError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The bytes do not decode as a membership message.
    case malformed(String)
    /// A field exceeds its limit (name, addresses, roster, activity, invitations).
    case limitExceeded(what: String, limit: Int)
    /// The message names another session.
    case wrongSession
    /// A join request from a peer that was not admitted by an invitation, or under an unknown or expired one.
    case notInvited
    /// The identity's binding signature does not verify, or its Noise key is not the connection's.
    case invalidIdentity
    /// A message that only the named member may send came from someone else.
    case impersonation
    /// A message that makes no sense in the current phase (a WELCOME to a member, a join request to a joiner).
    case unexpected(String)
    /// A charter whose session id does not derive from its creator and nonce, or whose signature does not verify.
    case invalidCharter
    /// A removal whose signature does not verify, or that the charter does not permit its author.
    case removalRefused(String)
    /// A join request (or record) from an identity that was removed from the session.
    case removedMember

    public var description: String {
        switch self {
        case .malformed(let detail): "malformed membership message: \(detail)"
        case .limitExceeded(let what, let limit): "\(what) exceeds the limit of \(limit)"
        case .wrongSession: "the message is for another session"
        case .notInvited: "join request without a valid invitation"
        case .invalidIdentity: "the identity's binding signature or key does not match the connection"
        case .impersonation: "a message only its subject may send came from another member"
        case .unexpected(let detail): "unexpected membership message: \(detail)"
        case .invalidCharter: "the charter does not belong to this session or its signature does not verify"
        case .removalRefused(let detail): "removal refused: \(detail)"
        case .removedMember: "this identity was removed from the session"
        }
    }
}
