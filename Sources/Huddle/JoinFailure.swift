import HuddleSession

/// Why joining a session failed: the payload of ``HuddleError/joinFailed(_:)`` and of
/// ``InvalidationReason/joinFailed(_:)``.
public enum JoinFailure: Sendable, Hashable, CustomStringConvertible {
    /// The session's activity is of another kind than the one asked for (`expected` and `found` are activity
    /// identifiers).
    case activityMismatch(expected: String, found: String)
    /// The member that was letting this node in disconnected before it finished; try the invitation again.
    case sponsorDisconnected
    /// No member named in the invitation could be reached (the members' addresses and the ticket's relays were all
    /// tried).
    case noMemberReachable
    /// No member answered within the join timeout.
    case noAnswer(within: Duration)
    /// The invitation's secret cannot be used (it is not a secret this version can derive keys from).
    case invitationUnusable
    /// The invitation asks a member to let each joiner in, and one denied this node.
    case denied
    /// The invitation asks a member to let each joiner in, and nobody answered within two minutes.
    case unanswered
    /// The invitation was revoked (or closed by a removal) while this node was joining with it, or every use of a
    /// limited one was taken; ask for a new one.
    case invitationClosed
    /// A member turned this node away for a reason this version does not know.
    case refused
    /// A member the invitation names refused the handshake because it speaks another protocol revision, and no
    /// member that speaks this node's could be reached. `ours` and `theirs` are the two revisions as
    /// ``HuddleNode/protocolVersion`` and `huddle --version` name them (`huddle/1`); run builds of one revision.
    case incompatibleProtocol(ours: String, theirs: String)

    /// The failure the membership machine reported.
    init(_ cause: JoinFailureCause) {
        switch cause {
        case .sponsorDisconnected: self = .sponsorDisconnected
        case .noMemberReachable: self = .noMemberReachable
        case .refused(.denied): self = .denied
        case .refused(.unanswered): self = .unanswered
        case .refused(.invitationClosed): self = .invitationClosed
        case .refused(.unspecified): self = .refused
        case .incompatibleProtocol(let ours, let theirs):
            self = .incompatibleProtocol(
                ours: JoinFailureCause.revisionName(ours), theirs: JoinFailureCause.revisionName(theirs))
        }
    }

    public var description: String {
        switch self {
        case .activityMismatch(let expected, let found):
            "the session's activity is \(found), not \(expected)"
        case .sponsorDisconnected: "the member that was letting this node in disconnected"
        case .noMemberReachable: "no member named in the invitation could be reached"
        case .noAnswer(let timeout):
            "no member answered within \(timeout) (offline, unreachable from here, or speaking a protocol other than "
                + "\(HuddleNode.protocolVersion): compare `huddle --version`)"
        case .invitationUnusable: "the invitation's secret cannot be used"
        case .denied: "a member denied the request to join"
        case .unanswered: "no member answered the request to join within two minutes"
        case .invitationClosed: "the invitation was revoked or used up; ask a member for a new one"
        case .refused: "a member turned this node away"
        case .incompatibleProtocol(let ours, let theirs):
            "a member speaks protocol \(theirs) and this node \(ours): run builds of one protocol revision on both "
                + "(compare `huddle --version`)"
        }
    }
}
