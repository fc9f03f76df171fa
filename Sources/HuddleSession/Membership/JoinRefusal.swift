/// Why a member turned a joiner away (JOIN_REFUSED, control type 16): the joiner's join fails with it.
public enum JoinRefusal: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// A reason this version does not know (a newer member's): the join is refused all the same.
    case unspecified = 0
    /// A member denied the ask-to-join request.
    case denied = 1
    /// The invitation the joiner used was closed (revoked, closed by a removal, or every use of a limited one taken)
    /// before it was let in.
    case invitationClosed = 2
    /// No member answered the ask-to-join request within ``ProtocolLimits/joinApprovalTimeout``.
    case unanswered = 3

    /// The refusal encoded as `byte`; an unknown value is ``unspecified``.
    init(byte: UInt8) { self = JoinRefusal(rawValue: byte) ?? .unspecified }

    public var description: String {
        switch self {
        case .unspecified: "a member turned this node away"
        case .denied: "a member denied the request to join"
        case .invitationClosed: "the invitation was revoked or used up before this node was let in"
        case .unanswered: "no member answered the request to join in time"
        }
    }
}
