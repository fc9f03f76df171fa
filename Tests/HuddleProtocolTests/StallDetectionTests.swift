import HuddleCrypto
import HuddleTestKit
import Testing

@testable import HuddleProtocol

/// A connection whose process was stalled (stopped with SIGSTOP, starved of CPU) reads, on waking, acknowledgements
/// that arrived long ago: their RTT samples would say the path takes as long as the stall, and three probe timeouts
/// of such a path kept a dead peer's connection open for two minutes in the churn simulator. A connection that runs
/// much later than its probe timer allows takes no sample from packets sent before it woke
/// (``ProtocolLimits/stallTolerance``).
@Suite("RTT samples across a stall")
struct StallDetectionTests {
    /// `a` sends one message to `b`; `b`'s acknowledgement reaches `a` `after` later, `a` having run nothing since.
    static func acknowledgement(arrivingAfter after: Duration) throws -> Connection {
        var (a, b) = try ConnectionRestartTests.connected()
        let id = try #require(a.connectionID(for: b.staticKey))
        // Settle the handshake's own samples first.
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(5))
        _ = try a.send([1, 2, 3], on: ConnectionRestartTests.channel, to: id)
        let sentAt = Instant.zero + .milliseconds(10)
        let toB = EndpointPair.drain(&a, now: sentAt)
        EndpointPair.deliver(toB, to: &b, from: 1, now: sentAt + .milliseconds(1))
        // b acknowledges after its maximum ACK delay at the latest.
        let toA = EndpointPair.drain(&b, now: sentAt + .milliseconds(40))
        #expect(!toA.isEmpty)
        EndpointPair.deliver(toA, to: &a, from: 2, now: sentAt + after)
        return try #require(a.connection(id))
    }

    @Test("An acknowledgement read 40 s late, after a stall, leaves the RTT estimate as it was")
    func stallGivesNoSample() throws {
        let connection = try Self.acknowledgement(arrivingAfter: .seconds(40))
        #expect(connection.statistics.stallsDetected == 1)
        #expect(connection.rtt.smoothed < .milliseconds(100), "\(connection.rtt.smoothed)")
        #expect(connection.rtt.probeTimeout * 3 < .seconds(30), "the idle timeout stays at its configured 30 s")
    }

    @Test("One read 1.5 s late, within the probe timer's allowance, is a slow path: its sample counts")
    func slowPathGivesSample() throws {
        let connection = try Self.acknowledgement(arrivingAfter: .milliseconds(1_500))
        #expect(connection.statistics.stallsDetected == 0)
        #expect(connection.rtt.latest > .seconds(1), "\(connection.rtt.latest)")
    }
}
