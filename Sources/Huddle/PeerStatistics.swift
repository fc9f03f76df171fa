import HuddleProtocol

/// Per-participant connection figures, for diagnostics (`/peers` in the CLI).
public struct PeerStatistics: Sendable, Hashable {
    /// The participant.
    public let participant: Participant
    /// The smoothed round-trip time (RFC 9002).
    public let smoothedRTT: Duration
    /// Packets sent to it on its path (probes of other addresses, and of larger sizes, not counted).
    public let packetsSent: Int
    /// Of those, packets declared lost (and their frames resent).
    public let packetsLost: Int
    /// The path packets to it take now.
    public let path: PeerPath
    /// The session member ``path`` goes through when another member relays the two of you (you could not meet
    /// directly, and both reach it: ``HuddleNode/Configuration/relaysForMembers``); `nil` on a direct path or through
    /// a dedicated relay or TURN server.
    public let relayingMember: Participant?
    /// The largest UDP payload the path is known to carry (Path MTU discovery; 1200 until a larger size is confirmed,
    /// and on a relayed path).
    public let datagramSize: Int

    /// Lost packets over sent packets.
    public var lossRate: Double { packetsSent > 0 ? Double(packetsLost) / Double(packetsSent) : 0 }
}

/// The path packets to a participant take: straight to its address, or through a relay (both ends behind NATs that
/// hole punching could not cross, or not yet). Either way the traffic is end-to-end encrypted.
public enum PeerPath: Sendable, Hashable, CustomStringConvertible {
    /// Straight to the participant at this address.
    case direct(NetworkAddress)
    /// Through the relay at this address.
    case relayed(via: NetworkAddress)

    public var description: String {
        switch self {
        case .direct(let address): return "direct \(address)"
        case .relayed(let relay): return "relayed via \(relay)"
        }
    }
}

extension PeerStatistics {
    /// The figures of `participant`'s connection on `endpoint`, `nil` while it has no established one.
    init?(of participant: Participant, among participants: Set<Participant>, on endpoint: Endpoint) {
        guard let id = endpoint.connectionID(for: participant.staticKey), let connection = endpoint.connection(id),
            connection.state == .established
        else { return nil }
        let relaying = endpoint.memberRelay(on: connection.route)
        self.init(
            participant: participant, smoothedRTT: connection.rtt.smoothed,
            packetsSent: connection.statistics.packetsSent - connection.statistics.pathProbesSent
                - connection.statistics.pathMTUProbesSent,
            packetsLost: connection.statistics.packetsLost,
            path: PeerPath(connection.route),
            relayingMember: relaying.flatMap { key in participants.first { $0.staticKey == key } },
            datagramSize: connection.pathDatagramSize)
    }
}
