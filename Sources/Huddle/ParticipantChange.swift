import HuddleProtocol
import HuddleSession

/// One change to a session's active participants, with its reason; ``GroupSession/participantChanges`` yields them
/// in order.
public enum ParticipantChange: Sendable, Hashable {
    /// The participant became active (it joined, or came back after being unreachable).
    case joined(Participant)
    /// The participant stopped being active.
    case left(Participant, reason: DepartureReason)

    /// Why a participant stopped being active.
    public enum DepartureReason: String, Sendable, Hashable {
        /// It left (or ended the session).
        case left
        /// Its connection was lost without a goodbye (crash, network failure: detected by the idle timeout), or
        /// could not be set up.
        case unreachable
        /// It crashed and rejoined: the participant it was lost its state, and a `.joined` for it follows.
        case restarted
    }
}

extension ParticipantChange.DepartureReason {
    init(_ reason: MembershipAction.DepartureReason) {
        switch reason {
        case .left: self = .left
        case .unreachable: self = .unreachable
        case .restarted: self = .restarted
        }
    }
}

/// Per-participant connection figures, for diagnostics (`/peers` in the CLI).
public struct PeerStatistics: Sendable, Hashable {
    /// The participant.
    public let participant: Participant
    /// The smoothed round-trip time (RFC 9002).
    public let smoothedRTT: Duration
    /// Packets sent to it.
    public let packetsSent: Int
    /// Packets declared lost (and their frames resent).
    public let packetsLost: Int
    /// The path packets to it take now.
    public let path: PeerPath
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
