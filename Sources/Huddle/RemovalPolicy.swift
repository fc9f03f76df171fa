import HuddleSession

/// Who may remove participants from a session (``GroupSession/remove(_:)``), chosen when it is created
/// (``HuddleNode/activate(_:removalPolicy:)``) and signed by its creator, so every member enforces the same rule.
public enum RemovalPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Only the participant that created the session (the default).
    case creatorOnly
    /// Every participant.
    case anyMember

    /// The charter's policy.
    var charterPolicy: SessionCharter.RemovalPolicy {
        switch self {
        case .creatorOnly: .creatorOnly
        case .anyMember: .anyMember
        }
    }

    public var description: String {
        switch self {
        case .creatorOnly: "only the session's creator may remove participants"
        case .anyMember: "every participant may remove participants"
        }
    }
}

extension RemovalPolicy {
    /// The public policy for a charter's.
    init(_ policy: SessionCharter.RemovalPolicy) {
        switch policy {
        case .creatorOnly: self = .creatorOnly
        case .anyMember: self = .anyMember
        }
    }
}
