/// How an ask-to-join request ended, as one member learned it.
public enum JoinRequestOutcome: Sendable, Hashable {
    /// A member let the joiner in (`by`: that member's record; this node's own when it answered).
    case admitted(by: MemberRecord)
    /// A member turned the joiner away.
    case denied(by: MemberRecord)
    /// Nobody answered within ``ProtocolLimits/joinApprovalTimeout``, or newer requests pushed it out
    /// (``ProtocolLimits/maxPendingJoinRequests``).
    case expired
}
