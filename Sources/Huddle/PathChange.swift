import HuddleProtocol

/// A participant's connection moved to another path: from a relay to a direct path after hole punching, back to a
/// relay when the direct path failed, or to the participant's new address after it moved
/// (``GroupSession/pathChanges``).
///
/// The path a connection starts on is in ``GroupSession/peerStatistics()``; this reports each move after that.
public struct PathChange: Sendable, Hashable {
    /// The participant whose connection moved.
    public let participant: Participant
    /// The path its packets take from now on.
    public let path: PeerPath
    /// The session member ``path`` goes through when another member relays the two of you; `nil` on a direct path
    /// or through a dedicated relay or TURN server (see ``PeerStatistics/relayingMember``).
    public let relayingMember: Participant?
    /// The connection's smoothed round-trip time when it moved (RFC 9002; measured on the earlier path until the new
    /// one has samples).
    public let smoothedRTT: Duration

    /// How many changes an observer of ``GroupSession/pathChanges`` that does not read keeps: the newest, since the
    /// latest path per participant is what matters.
    public static let observerBufferLimit = 64
}

extension PeerPath {
    /// The path of a connection on `route`.
    init(_ route: Route) {
        switch route {
        case .direct(let address): self = .direct(address)
        case .relayed(let relay, _): self = .relayed(via: relay)
        case .turn(let server, _): self = .relayed(via: server.address)
        }
    }
}
