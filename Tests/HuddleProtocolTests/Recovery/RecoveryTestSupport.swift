import HuddleProtocol
import HuddleWire

/// Helpers shared by the recovery tests. Records are strings naming the packet ("p7"), so a test can check which
/// records come back.
enum RecoveryTest {
    typealias Tracker = SentPacketTracker<String>

    /// The instant `milliseconds` after the origin.
    static func at(_ milliseconds: Int64) -> Instant {
        Instant.zero + .milliseconds(milliseconds)
    }

    /// An ACK frame for `ranges`, given highest first, with `delay` microseconds of ACK delay.
    static func ack(_ ranges: ClosedRange<UInt64>..., delay: UInt64 = 0) -> AckFrame {
        do {
            return AckFrame(ackDelay: delay, ranges: try AckRanges(descending: ranges))
        } catch {
            preconditionFailure("bad test ranges \(ranges): \(error)")
        }
    }

    /// Sends packet `packetNumber` at `now`: ack-eliciting and in flight unless `ackOnly`, recorded as "p<n>".
    static func send(
        _ tracker: inout Tracker, _ packetNumber: UInt64, at now: Instant, bytes: Int = 1000, ackOnly: Bool = false
    ) {
        do {
            try tracker.onSent(
                packetNumber, bytes: bytes, ackEliciting: !ackOnly, inFlight: !ackOnly, record: "p\(packetNumber)",
                now: now)
        } catch {
            preconditionFailure("unexpected refusal to send \(packetNumber): \(error)")
        }
    }

    /// The packet numbers of `packets`.
    static func numbers(_ packets: [Tracker.Packet]) -> [UInt64] {
        packets.map(\.packetNumber)
    }

    /// The probe count of a timeout result, or `nil` if it is not a probe.
    static func probeCount(_ result: Tracker.TimeoutResult) -> Int? {
        if case .probe(let count) = result { return count }
        return nil
    }

    /// The loss event of a timeout result, or `nil` if it is not a loss.
    static func loss(_ result: Tracker.TimeoutResult) -> Tracker.LossEvent? {
        if case .lost(let loss) = result { return loss }
        return nil
    }

    /// Whether a timeout result is `.notDue`.
    static func isNotDue(_ result: Tracker.TimeoutResult) -> Bool {
        if case .notDue = result { return true }
        return false
    }
}
