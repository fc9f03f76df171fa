import HuddleProtocol
import HuddleWire
import Testing

@Suite("Sent packets: acknowledgement, validation, RTT samples and limits")
struct SentPacketTrackerTests {
    typealias T = RecoveryTest

    @Test("Bytes in flight follow sends, acknowledgements and losses; pure ACKs never count")
    func bytesInFlight() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        for number: UInt64 in 0...4 { T.send(&tracker, number, at: T.at(0)) }
        T.send(&tracker, 5, at: T.at(0), bytes: 50, ackOnly: true)
        #expect(tracker.bytesInFlight == 5000)
        #expect(tracker.ackElicitingInFlight == 5)
        #expect(tracker.trackedPacketCount == 6)
        #expect(tracker.largestSent == 5)
        #expect(tracker.largestAcknowledged == nil)

        let first = try tracker.onAck(T.ack(0...1), now: T.at(100), rtt: &rtt)
        #expect(T.numbers(first.acknowledged) == [0, 1])
        #expect(first.acknowledged.map(\.record) == ["p0", "p1"])
        #expect(first.acknowledgedBytesInFlight == 2000)
        #expect(first.latestAcknowledgedSentTime == T.at(0))
        #expect(first.lost.isEmpty)
        #expect(tracker.bytesInFlight == 3000)
        #expect(tracker.ackElicitingInFlight == 3)
        #expect(tracker.largestAcknowledged == 1)

        // 3, 4 and the pure ACK 5: 2000 in-flight bytes acknowledged; 2 is 5 - 2 = 3 numbers behind: lost.
        let second = try tracker.onAck(T.ack(3...5), now: T.at(110), rtt: &rtt)
        #expect(T.numbers(second.acknowledged) == [3, 4, 5])
        #expect(second.acknowledgedBytesInFlight == 2000)
        #expect(T.numbers(second.lost) == [2])
        #expect(second.lost.map(\.record) == ["p2"])
        #expect(second.loss.bytesInFlight == 1000)
        #expect(tracker.bytesInFlight == 0)
        #expect(tracker.ackElicitingInFlight == 0)
        #expect(tracker.trackedPacketCount == 0)
        #expect(tracker.largestAcknowledged == 5)
    }

    @Test("Acknowledged packets come back in increasing order across ranges")
    func ackOrder() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        for number: UInt64 in 0...9 { T.send(&tracker, number, at: T.at(0)) }
        let result = try tracker.onAck(T.ack(8...9, 4...5, 1...1), now: T.at(10), rtt: &rtt)
        #expect(T.numbers(result.acknowledged) == [1, 4, 5, 8, 9])
        // Lost by the packet threshold (largest 9): 0, 2, 3, 6 (9 >= 6 + 3); 7 is only 2 behind.
        #expect(T.numbers(result.lost) == [0, 2, 3, 6])
        #expect(tracker.bytesInFlight == 1000)
    }

    @Test("An ACK above the largest sent number throws and changes nothing (F6)")
    func ackAboveLargestSent() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        #expect(throws: ProtocolError.protocolViolation(.acknowledgedUnsentPacket(0))) {
            try tracker.onAck(T.ack(0...0), now: T.at(1), rtt: &rtt)
        }
        for number: UInt64 in 0...4 { T.send(&tracker, number, at: T.at(0)) }
        #expect(throws: ProtocolError.protocolViolation(.acknowledgedUnsentPacket(5))) {
            try tracker.onAck(T.ack(5...5, 0...3), now: T.at(50), rtt: &rtt)
        }
        #expect(tracker.bytesInFlight == 5000)
        #expect(tracker.largestAcknowledged == nil)
        #expect(!rtt.hasSample)
        // The valid part alone is accepted.
        let result = try tracker.onAck(T.ack(0...3), now: T.at(50), rtt: &rtt)
        #expect(T.numbers(result.acknowledged) == [0, 1, 2, 3])
    }

    @Test("An ACK covering a skipped packet number throws and changes nothing (F6)")
    func ackOfSkippedNumber() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        // 2 and 3 are skipped.
        for number: UInt64 in [0, 1, 4, 5] { T.send(&tracker, number, at: T.at(0)) }
        #expect(throws: ProtocolError.protocolViolation(.acknowledgedUnsentPacket(3))) {
            try tracker.onAck(T.ack(3...5), now: T.at(10), rtt: &rtt)
        }
        #expect(throws: ProtocolError.protocolViolation(.acknowledgedUnsentPacket(2))) {
            try tracker.onAck(T.ack(0...5), now: T.at(10), rtt: &rtt)
        }
        #expect(throws: ProtocolError.protocolViolation(.acknowledgedUnsentPacket(2))) {
            try tracker.onAck(T.ack(2...2, 0...0), now: T.at(10), rtt: &rtt)
        }
        #expect(tracker.trackedPacketCount == 4)
        #expect(tracker.bytesInFlight == 4000)
        let result = try tracker.onAck(T.ack(4...5, 0...1), now: T.at(10), rtt: &rtt)
        #expect(T.numbers(result.acknowledged) == [0, 1, 4, 5])
        // A number below the first packet sent was never sent either.
        var late = T.Tracker()
        T.send(&late, 3, at: T.at(0))
        #expect(throws: ProtocolError.protocolViolation(.acknowledgedUnsentPacket(1))) {
            try late.onAck(T.ack(3...3, 1...1), now: T.at(1), rtt: &rtt)
        }
    }

    @Test("Only the 64 most recent runs of skipped numbers are remembered")
    func skippedRunsLimit() throws {
        #expect(ProtocolLimits.maxTrackedSkippedRanges == 64)
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        // 0, 2, 4, ..., 130 skip 1, 3, ..., 129: 65 runs; the run 1...1 is forgotten.
        for index: UInt64 in 0...65 { T.send(&tracker, index * 2, at: T.at(0)) }
        #expect(throws: ProtocolError.protocolViolation(.acknowledgedUnsentPacket(3))) {
            try tracker.onAck(T.ack(3...3), now: T.at(1), rtt: &rtt)
        }
        let result = try tracker.onAck(T.ack(1...1), now: T.at(1), rtt: &rtt)
        #expect(result.acknowledged.isEmpty)
    }

    @Test("A duplicate ACK is harmless: empty result, no RTT sample, no backoff reset")
    func duplicateAck() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        for number: UInt64 in 0...2 { T.send(&tracker, number, at: T.at(0)) }
        let first = try tracker.onAck(T.ack(0...1), now: T.at(50), rtt: &rtt)
        #expect(first.tookRTTSample)
        #expect(rtt.smoothed == .milliseconds(50))
        // Packet 2 (sent at 0) is outstanding; PTO = 50 + 4 * 25 + 25 = 175 ms after 0.
        #expect(T.probeCount(tracker.onTimeout(now: T.at(175), rtt: rtt)) == 2)
        #expect(tracker.probeTimeoutCount == 1)

        let duplicate = try tracker.onAck(T.ack(0...1), now: T.at(200), rtt: &rtt)
        #expect(duplicate.acknowledged.isEmpty)
        #expect(duplicate.lost.isEmpty)
        #expect(!duplicate.tookRTTSample)
        #expect(rtt.smoothed == .milliseconds(50))
        #expect(rtt.latest == .milliseconds(50))
        #expect(tracker.bytesInFlight == 1000)
        #expect(tracker.probeTimeoutCount == 1)
        #expect(tracker.largestAcknowledged == 1)
    }

    @Test("RTT sample when the largest acknowledged is newly acknowledged, using the frame's ACK delay")
    func rttSample() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        T.send(&tracker, 1, at: T.at(10))
        // The largest (1) is newly acknowledged: sample = 100 - 10 = 90 ms.
        let first = try tracker.onAck(T.ack(1...1), now: T.at(100), rtt: &rtt)
        #expect(first.tookRTTSample)
        #expect(rtt.latest == .milliseconds(90))
        #expect(rtt.smoothed == .milliseconds(90))
        // 0 is newly acknowledged but the largest (1) is not: no sample.
        let second = try tracker.onAck(T.ack(0...1), now: T.at(200), rtt: &rtt)
        #expect(T.numbers(second.acknowledged) == [0])
        #expect(!second.tookRTTSample)
        #expect(rtt.latest == .milliseconds(90))

        // ACK delay in µs: sample 150 - 10 = 140 ms, 20 000 µs = 20 ms; 140 >= 90 + 20 so adjusted = 120 ms:
        // smoothed = (7 * 90 + 120) / 8 = 93.75 ms.
        T.send(&tracker, 2, at: T.at(210))
        let third = try tracker.onAck(T.ack(0...2, delay: 20_000), now: T.at(350), rtt: &rtt)
        #expect(third.tookRTTSample)
        #expect(rtt.latest == .milliseconds(140))
        #expect(rtt.smoothed == .microseconds(93_750))
    }

    @Test("No RTT sample when nothing ack-eliciting is newly acknowledged")
    func rttSampleNeedsAckEliciting() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        T.send(&tracker, 1, at: T.at(5), bytes: 40, ackOnly: true)
        _ = try tracker.onAck(T.ack(0...0), now: T.at(50), rtt: &rtt)
        #expect(rtt.latest == .milliseconds(50))
        // The largest, 1, is newly acknowledged but is a pure ACK, and nothing else is new.
        let result = try tracker.onAck(T.ack(0...1), now: T.at(90), rtt: &rtt)
        #expect(T.numbers(result.acknowledged) == [1])
        #expect(!result.tookRTTSample)
        #expect(rtt.latest == .milliseconds(50))
    }

    @Test("A pure ACK as the largest still gives a sample when an ack-eliciting packet is newly acknowledged")
    func rttSampleFromLargestPureAck() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        T.send(&tracker, 1, at: T.at(10), bytes: 40, ackOnly: true)
        // RFC 9002 §5.1: the sample is measured from the largest acknowledged packet: 100 - 10 = 90 ms.
        let result = try tracker.onAck(T.ack(0...1), now: T.at(100), rtt: &rtt)
        #expect(result.tookRTTSample)
        #expect(rtt.latest == .milliseconds(90))
    }

    @Test("At 65 536 tracked packets sending is refused with queueFull until an ACK makes room")
    func trackedPacketLimit() throws {
        let limit = ProtocolLimits.maxTrackedSentPackets
        #expect(limit == 65_536)
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        for number in 0..<UInt64(limit - 1) {
            try tracker.onSent(number, bytes: 1, ackEliciting: true, inFlight: true, record: "", now: T.at(0))
        }
        #expect(tracker.canSend)
        try tracker.onSent(UInt64(limit - 1), bytes: 1, ackEliciting: true, inFlight: true, record: "", now: T.at(0))
        #expect(!tracker.canSend)
        #expect(tracker.trackedPacketCount == limit)
        #expect(throws: ProtocolError.queueFull(limit: limit)) {
            try tracker.onSent(UInt64(limit), bytes: 1, ackEliciting: true, inFlight: true, record: "", now: T.at(1))
        }
        #expect(tracker.largestSent == UInt64(limit - 1))
        #expect(tracker.bytesInFlight == limit)

        // Acknowledging the oldest packet frees one slot.
        _ = try tracker.onAck(T.ack(0...0), now: T.at(2), rtt: &rtt)
        #expect(tracker.canSend)
        try tracker.onSent(UInt64(limit), bytes: 1, ackEliciting: true, inFlight: true, record: "", now: T.at(3))
        #expect(!tracker.canSend)
        // Acknowledging everything empties the tracker.
        let all = try tracker.onAck(T.ack(0...UInt64(limit)), now: T.at(4), rtt: &rtt)
        #expect(all.acknowledged.count == limit)
        #expect(tracker.trackedPacketCount == 0)
        #expect(tracker.bytesInFlight == 0)
    }

    @Test("Pure ACKs after the last ack-eliciting packet are capped at 1024: the oldest half is forgotten")
    func ackOnlyTail() throws {
        let limit = ProtocolLimits.maxTrackedAckOnlyPackets
        #expect(limit == 1024)
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        for number in 1...UInt64(limit) { T.send(&tracker, number, at: T.at(1), bytes: 40, ackOnly: true) }
        #expect(tracker.trackedPacketCount == 1 + limit)
        // One more: 1025 > 1024, so 1025 - 512 = 513 (packets 1...513) are forgotten; 514...1025 remain.
        T.send(&tracker, UInt64(limit + 1), at: T.at(1), bytes: 40, ackOnly: true)
        #expect(tracker.trackedPacketCount == 1 + limit / 2)
        #expect(tracker.bytesInFlight == 1000)

        // Acknowledging forgotten numbers is valid and simply reports nothing for them.
        let result = try tracker.onAck(T.ack(0...UInt64(limit + 1)), now: T.at(10), rtt: &rtt)
        #expect(result.acknowledged.count == 1 + limit / 2)
        #expect(result.acknowledged.first?.packetNumber == 0)
        #expect(result.acknowledged.dropFirst().first?.packetNumber == UInt64(limit / 2 + 2))
        #expect(tracker.trackedPacketCount == 0)
    }

    @Test("An ack-eliciting packet resets the pure-ACK count")
    func ackOnlyTailResets() {
        var tracker = T.Tracker()
        for number in 0..<UInt64(1000) { T.send(&tracker, number, at: T.at(0), bytes: 40, ackOnly: true) }
        T.send(&tracker, 1000, at: T.at(0))
        for number in 1001..<UInt64(2000) { T.send(&tracker, number, at: T.at(0), bytes: 40, ackOnly: true) }
        // 1000 + 1 + 999: neither run exceeded 1024 after the last ack-eliciting packet.
        #expect(tracker.trackedPacketCount == 2000)
    }
}
