import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// IMMEDIATE_ACK and HONORS_IMMEDIATE_ACK (PROTOCOL.md §2.4, §7.8): a lone message is acknowledged at once, so its
/// loss is noticed about a round trip later, not after the peer's 25 ms acknowledgement delay as well; a peer that
/// never said it honours the flag keeps the full probe timeout.
@Suite("Immediate acknowledgement of a lone message")
struct ImmediateAckTests {
    static func flags(of datagram: [UInt8]) throws -> TransportFlags {
        try datagram.withUnsafeBytes { try TransportHeader(decoding: $0).flags }
    }

    @Test("The receive side: a flagged lone packet is due for acknowledgement at once, an unflagged one after 25 ms")
    func receiverHonoursTheFlag() {
        let now = Instant.zero + .milliseconds(3)
        var plain = ReceivedPacketTracker()
        plain.onReceived(0, ackEliciting: true, now: now)
        #expect(plain.ackDeadline == now + ProtocolLimits.maxAckDelay)
        var flagged = ReceivedPacketTracker()
        flagged.onReceived(0, ackEliciting: true, immediate: true, now: now)
        #expect(flagged.ackDeadline == now)
        // A packet that elicits nothing is not acknowledged on its own, flag or not.
        var ackOnly = ReceivedPacketTracker()
        ackOnly.onReceived(0, ackEliciting: false, immediate: true, now: now)
        #expect(ackOnly.ackDeadline == nil)
    }

    @Test("A lone message goes out flagged, is acknowledged at once, and its loss is probed within 3 ms, not 25")
    func loneMessageRecoversAtPathSpeed() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        let id = try #require(a.connectionID(for: b.staticKey))
        let roundTrip = Duration.microseconds(200)
        var now = Instant.zero + .milliseconds(5)
        // Warm the estimate on a 0.2 ms path: a few messages each way, acknowledged at once.
        for round in 0..<8 {
            _ = try a.send([UInt8(round)], on: ConnectionRestartTests.channel, to: id)
            let toB = EndpointPair.drain(&a, now: now)
            #expect(try toB.allSatisfy { try Self.flags(of: $0).contains(.honorsImmediateAck) })
            #expect(try Self.flags(of: try #require(toB.last)).contains(.immediateAck))
            EndpointPair.deliver(toB, to: &b, from: 1, now: now + roundTrip / 2)
            // b's acknowledgement goes out at once, not 25 ms later.
            let toA = EndpointPair.drain(&b, now: now + roundTrip / 2)
            #expect(!toA.isEmpty, "round \(round): b did not acknowledge at once")
            EndpointPair.deliver(toA, to: &a, from: 2, now: now + roundTrip)
            now = now + .milliseconds(1)
        }
        let connection = try #require(a.connection(id))
        #expect(connection.peerHonorsImmediateAck)
        #expect(connection.rtt.smoothed < .milliseconds(1), "\(connection.rtt.smoothed)")

        // The next lone message is lost: the probe comes at about the path's own time scale.
        _ = try a.send([9], on: ConnectionRestartTests.channel, to: id)
        let sentAt = now
        #expect(!EndpointPair.drain(&a, now: sentAt).isEmpty)
        let deadline = try #require(a.connection(id)?.sentPackets.probeDeadline(rtt: connection.rtt))
        #expect(deadline - sentAt < .milliseconds(3), "probe after \(deadline - sentAt)")
        #expect(deadline - sentAt >= RTTEstimator.granularity)
        a.handleTimeout(now: deadline)
        let probes = EndpointPair.drain(&a, now: deadline)
        #expect(!probes.isEmpty)
        #expect(try probes.allSatisfy { try Self.flags(of: $0).contains(.immediateAck) })
        #expect(a.connection(id)?.statistics.packetsLost == 0, "a probe is not a loss")
        // The probe carries the message again (it is not known lost yet, so not a PING alone).
        EndpointPair.deliver(probes, to: &b, from: 1, now: deadline + roundTrip / 2)
        let delivered = EndpointPair.events(&b).contains { event in
            if case .message(_, _, let bytes) = event { bytes == [9] } else { false }
        }
        #expect(delivered, "the probe did not carry the lost message")
    }

    @Test("Toward a peer that never set HONORS_IMMEDIATE_ACK (the first revision), the probe waits for its 25 ms")
    func oldPeerKeepsTheFullProbeTimeout() throws {
        var tracker = SentPacketTracker<Int>()
        let rtt = RTTEstimator(initialRTT: .microseconds(200))
        let sentAt = Instant.zero + .milliseconds(1)
        try tracker.onSent(
            0, bytes: 100, ackEliciting: true, inFlight: true, record: 0, acknowledgedAtOnce: false,
            now: sentAt)
        let full = try #require(tracker.probeDeadline(rtt: rtt))
        #expect(full - sentAt >= ProtocolLimits.maxAckDelay)
        try tracker.onSent(
            1, bytes: 100, ackEliciting: true, inFlight: true, record: 0, acknowledgedAtOnce: true,
            now: sentAt)
        let prompt = try #require(tracker.probeDeadline(rtt: rtt))
        #expect(prompt - sentAt == rtt.immediateProbeTimeout)
        #expect(prompt - sentAt < .milliseconds(2))
    }
}
