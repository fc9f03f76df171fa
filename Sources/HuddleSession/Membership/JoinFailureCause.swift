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
            "a member speaks \(String(decoding: theirs, as: UTF8.self)), this node \(String(decoding: ours, as: UTF8.self))"
        }
    }
}
