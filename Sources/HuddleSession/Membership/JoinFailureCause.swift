/// Why the membership machine gave up joining (the join timeout is its own event, ``SessionEvent/joinTimedOut(after:)``).
public enum JoinFailureCause: Sendable, Hashable, CustomStringConvertible {
    /// The member that was letting this node in (the sponsor) disconnected before sending WELCOME.
    case sponsorDisconnected
    /// Every member the invitation names was tried, directly and through the ticket's relays, and none answered.
    case noMemberReachable
    /// A member turned this node away (JOIN_REFUSED), for the reason given.
    case refused(JoinRefusal)
    /// No member named in the invitation could be reached, and at least one refused the handshake because it speaks
    /// another protocol revision: `ours` is this node's Noise prologue, `theirs` the one it named (`huddle/N`).
    case incompatibleProtocol(ours: [UInt8], theirs: [UInt8])

    public var description: String {
        switch self {
        case .refused(let reason): reason.description
        case .sponsorDisconnected: "the member that was letting this node in disconnected"
        case .noMemberReachable: "no member named in the invitation could be reached"
        case .incompatibleProtocol(let ours, let theirs):
            "a member speaks \(Self.revisionName(theirs)), this node \(Self.revisionName(ours))"
        }
    }

    /// A prologue as text a person can read: its printable ASCII, anything else as `?` (a refusal's prologue comes
    /// from the peer, and ends up in logs and terminals).
    public static func revisionName(_ prologue: [UInt8]) -> String {
        String(prologue.map { (0x20...0x7E).contains($0) ? Character(UnicodeScalar($0)) : "?" })
    }
}
