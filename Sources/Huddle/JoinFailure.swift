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

    /// The failure the membership machine reported.
    init(_ cause: JoinFailureCause) {
        switch cause {
        case .sponsorDisconnected: self = .sponsorDisconnected
        case .noMemberReachable: self = .noMemberReachable
        }
    }

    public var description: String {
        switch self {
        case .activityMismatch(let expected, let found):
            "the session's activity is \(found), not \(expected)"
        case .sponsorDisconnected: "the member that was letting this node in disconnected"
        case .noMemberReachable: "no member named in the invitation could be reached"
        case .noAnswer(let timeout): "no member answered within \(timeout)"
        case .invitationUnusable: "the invitation's secret cannot be used"
        }
    }
}
