/// Where a ``GroupSession`` is in its life.
public enum GroupSessionState: Sendable, Hashable, CustomStringConvertible {
    /// Created, not yet joined.
    case waiting
    /// Joined: messages flow and participants are visible.
    case joined
    /// Over for this node; it cannot be joined again.
    case invalidated(reason: InvalidationReason)

    public var description: String {
        switch self {
        case .waiting: "waiting"
        case .joined: "joined"
        case .invalidated(let reason): "invalidated (\(reason))"
        }
    }
}

/// Why a session ended for this node.
public enum InvalidationReason: Sendable, Hashable, CustomStringConvertible {
    /// This node left.
    case left
    /// A member ended the session for everyone (`nil`: this node).
    case ended(by: Participant?)
    /// Joining failed; the payload says why.
    case joinFailed(JoinFailure)
    /// The node shut down.
    case nodeShutDown
    /// A member removed this node (`by`: that member, when this node knew it).
    case removed(by: Participant?)

    public var description: String {
        switch self {
        case .left: "left"
        case .ended(let by): by.map { "ended by \($0)" } ?? "ended by this node"
        case .joinFailed(let reason): "join failed: \(reason)"
        case .nodeShutDown: "the node shut down"
        case .removed(let by): by.map { "removed by \($0)" } ?? "removed from the session"
        }
    }
}
