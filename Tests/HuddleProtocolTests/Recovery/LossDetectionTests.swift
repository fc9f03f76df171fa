import HuddleProtocol
import HuddleWire
import Testing

@Suite("Loss detection, probe timeout and persistent congestion (RFC 9002 §6, §7.6)")
struct LossDetectionTests {
    typealias T = RecoveryTest

    /// Sends 0...3 at 0, 1, 2, 3 ms and acknowledges only 3 at 103 ms (sample 100 ms, so loss delay 112.5 ms).
    static func threeBehind() throws -> (T.Tracker, RTTEstimator, T.Tracker.AckResult) {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        for number: UInt64 in 0...3 { T.send(&tracker, number, at: T.at(Int64(number))) }
        let result = try tracker.onAck(T.ack(3...3), now: T.at(103), rtt: &rtt)
        return (tracker, rtt, result)
    }

    @Test("Packet threshold: lost exactly 3 numbers behind the largest acknowledged, not 2")
    func packetThreshold() throws {
        let (tracker, rtt, result) = try Self.threeBehind()
        #expect(result.tookRTTSample)
        #expect(rtt.smoothed == .milliseconds(100))
        #expect(rtt.lossDelay == .microseconds(112_500))
        // 3 >= 0 + 3: packet 0 is lost. 3 < 1 + 3: packet 1 is not (and 103 - 112.5 < 1 rules out time).
        #expect(T.numbers(result.lost) == [0])
        #expect(result.lost.map(\.record) == ["p0"])
        #expect(result.loss.bytesInFlight == 1000)
        #expect(result.loss.latestSentTime == T.at(0))
        #expect(!result.loss.persistentCongestion)
        #expect(tracker.bytesInFlight == 2000)
        // Packets 1 and 2 wait for the time threshold: the earliest, 1, at 1 + 112.5 = 113.5 ms.
        #expect(tracker.lossDeadline == T.at(113) + .microseconds(500))
        #expect(tracker.deadline(rtt: rtt) == tracker.lossDeadline)
    }

    @Test("Time threshold: lost exactly 9/8 RTT after sending, not a nanosecond before")
    func timeThresholdOnTimeout() throws {
        let (initial, rtt, _) = try Self.threeBehind()
        var tracker = initial
        let deadline = T.at(113) + .microseconds(500)
        // 1 ns early: nothing happens.
        #expect(T.isNotDue(tracker.onTimeout(now: deadline - .nanoseconds(1), rtt: rtt)))
        #expect(tracker.bytesInFlight == 2000)
        #expect(tracker.probeTimeoutCount == 0)
        // At 113.5 ms: 113.5 - 112.5 = 1 ms >= packet 1's send time, so it is lost; packet 2 (2 ms) is not.
        let loss = try #require(T.loss(tracker.onTimeout(now: deadline, rtt: rtt)))
        #expect(T.numbers(loss.packets) == [1])
        #expect(loss.latestSentTime == T.at(1))
        #expect(loss.bytesInFlight == 1000)
        #expect(tracker.bytesInFlight == 1000)
        // Next: packet 2 at 2 + 112.5 = 114.5 ms.
        #expect(tracker.lossDeadline == T.at(114) + .microseconds(500))
        #expect(tracker.probeTimeoutCount == 0)
    }

    @Test("Time threshold on an ACK: a packet sent exactly loss delay ago is lost")
    func timeThresholdOnAck() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        _ = try tracker.onAck(T.ack(0...0), now: T.at(100), rtt: &rtt)
        // Smoothed = latest = 100 ms: loss delay 112.5 ms.
        T.send(&tracker, 1, at: T.at(200))
        T.send(&tracker, 2, at: T.at(200) + .nanoseconds(1))
        T.send(&tracker, 3, at: T.at(300))
        // ACK of 3 at 312.5 ms: sample 12.5 ms, smoothed = (7 * 100 + 12.5) / 8 = 89.0625 ms, latest 12.5 ms;
        // loss delay = 9/8 * max(89.0625, 12.5) = 100.1953125 ms (instants truncate it to 100 195 312 ns).
        // Lost if sent at or before 312.5 - 100.195312 = 212.304688 ms: both 1 and 2, though only 2 and 1 numbers
        // behind 3.
        let result = try tracker.onAck(T.ack(3...3), now: T.at(312) + .microseconds(500), rtt: &rtt)
        #expect(rtt.smoothed == .nanoseconds(89_062_500))
        #expect(rtt.lossDelay.nanoseconds == 100_195_312)
        #expect(T.numbers(result.lost) == [1, 2])
        #expect(result.loss.latestSentTime == T.at(200) + .nanoseconds(1))
        #expect(tracker.lossDeadline == nil)
    }

    @Test("Time threshold boundary on an ACK, with a steady 100 ms RTT")
    func timeThresholdBoundaryOnAck() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        _ = try tracker.onAck(T.ack(0...0), now: T.at(100), rtt: &rtt)
        // Packet 1 sent at 1000 ms, packet 2 one nanosecond later, packet 3 at 1012.5 ms, acknowledged at 1112.5 ms:
        // sample 100 ms keeps smoothed = latest = 100 ms, loss delay 112.5 ms, so the cut-off is 1000 ms exactly.
        T.send(&tracker, 1, at: T.at(1000))
        T.send(&tracker, 2, at: T.at(1000) + .nanoseconds(1))
        T.send(&tracker, 3, at: T.at(1012) + .microseconds(500))
        let result = try tracker.onAck(T.ack(3...3), now: T.at(1112) + .microseconds(500), rtt: &rtt)
        #expect(rtt.lossDelay == .microseconds(112_500))
        #expect(T.numbers(result.lost) == [1])
        #expect(tracker.lossDeadline == T.at(1112) + .microseconds(500) + .nanoseconds(1))
    }

    @Test("The probe timeout is armed from the last ack-eliciting send, fires, and asks for two probes")
    func probeTimeout() throws {
        var tracker = T.Tracker()
        let rtt = RTTEstimator()
        // No sample: PTO = 333 + 4 * 166.5 + 25 = 1024 ms.
        #expect(rtt.probeTimeout == .milliseconds(1024))
        #expect(tracker.probeDeadline(rtt: rtt) == nil)
        T.send(&tracker, 0, at: T.at(0))
        T.send(&tracker, 1, at: T.at(10))
        #expect(tracker.lastAckElicitingSentTime == T.at(10))
        #expect(tracker.probeDeadline(rtt: rtt) == T.at(1034))
        #expect(tracker.deadline(rtt: rtt) == T.at(1034))
        #expect(T.isNotDue(tracker.onTimeout(now: T.at(1033), rtt: rtt)))
        #expect(tracker.probeTimeoutCount == 0)
        #expect(T.probeCount(tracker.onTimeout(now: T.at(1034), rtt: rtt)) == 2)
        #expect(tracker.probeTimeoutCount == 1)
        // The oldest outstanding ack-eliciting packet is a good probe.
        #expect(tracker.oldestOutstandingAckEliciting?.record == "p0")
        // Nothing was declared lost by the timeout.
        #expect(tracker.bytesInFlight == 2000)
    }

    @Test("The probe timeout doubles until 2 s, then probes every 2 s, and resets when an ACK arrives")
    func probeBackoff() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        // Three 200 ms samples: smoothed 200, variation 100 -> 75 -> 56.25; PTO = 200 + 225 + 100 = 525 ms.
        // Deadlines 525 and 1050 ms after the send (RFC 9002 doubling), then 2100 > 2 s: capped.
        rtt.maxAckDelay = .milliseconds(100)
        rtt.update(sample: .milliseconds(200), ackDelay: .zero)
        rtt.update(sample: .milliseconds(200), ackDelay: .zero)
        rtt.update(sample: .milliseconds(200), ackDelay: .zero)
        #expect(rtt.probeTimeout == .milliseconds(525))
        let pto = rtt.probeTimeout
        T.send(&tracker, 0, at: T.at(0))
        #expect(tracker.probeDeadline(rtt: rtt) == Instant.zero + pto)
        #expect(T.probeCount(tracker.onTimeout(now: Instant.zero + pto, rtt: rtt)) == 2)
        #expect(tracker.probeDeadline(rtt: rtt) == Instant.zero + pto * 2)
        #expect(T.isNotDue(tracker.onTimeout(now: Instant.zero + pto * 2 - .nanoseconds(1), rtt: rtt)))
        #expect(T.probeCount(tracker.onTimeout(now: Instant.zero + pto * 2, rtt: rtt)) == 2)
        // pto * 4 exceeds 2 s: the next probe comes 2 s after this timeout, and every 2 s after that.
        #expect(tracker.probeDeadline(rtt: rtt) == Instant.zero + pto * 2 + .seconds(2))
        #expect(T.probeCount(tracker.onTimeout(now: Instant.zero + pto * 2 + .seconds(2), rtt: rtt)) == 2)
        #expect(tracker.probeDeadline(rtt: rtt) == Instant.zero + pto * 2 + .seconds(4))
        // A probe sent later moves the base: 2 s after it.
        let probeSent = Instant.zero + pto * 2 + .seconds(3)
        T.send(&tracker, 1, at: probeSent)
        #expect(tracker.probeDeadline(rtt: rtt) == probeSent + .seconds(2))

        // The probe is acknowledged: the backoff resets to one PTO from the newest send, and packet 0 (long
        // outstanding) is declared lost by the time threshold.
        let result = try tracker.onAck(T.ack(1...1), now: probeSent + .milliseconds(200), rtt: &rtt)
        #expect(tracker.probeTimeoutCount == 0)
        #expect(T.numbers(result.lost) == [0])
        #expect(tracker.probeDeadline(rtt: rtt) == nil)
        #expect(T.isNotDue(tracker.onTimeout(now: T.at(100_000_000), rtt: rtt)))
        let next = probeSent + .milliseconds(202)
        T.send(&tracker, 2, at: next)
        #expect(tracker.probeDeadline(rtt: rtt) == next + rtt.probeTimeout)
    }

    @Test("Capped probes never fire more often than every 2 s, even when no probe can be sent")
    func probeBackoffCap() {
        var tracker = T.Tracker()
        let rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        var previous: Instant? = nil
        for _ in 0..<20 {
            let deadline = tracker.probeDeadline(rtt: rtt)!
            if let previous { #expect(deadline - previous >= .seconds(2)) }
            #expect(T.probeCount(tracker.onTimeout(now: deadline, rtt: rtt)) == 2)
            #expect(
                T.isNotDue(tracker.onTimeout(now: deadline, rtt: rtt)), "a second call at the same instant is not due")
            previous = deadline
        }
        #expect(tracker.probeTimeoutCount == 20)
        // The initial PTO is 1024 ms; doubled it would be 2048 ms, over the 2 s cap, so later probes are 2 s apart.
        #expect(tracker.probeDeadline(rtt: rtt) == T.at(1024 + 20 * 2000))
    }

    @Test("Pure ACK packets never arm the probe timeout")
    func pureAcksDoNotArmProbe() {
        var tracker = T.Tracker()
        let rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0), bytes: 40, ackOnly: true)
        #expect(tracker.probeDeadline(rtt: rtt) == nil)
        #expect(T.isNotDue(tracker.onTimeout(now: T.at(5000), rtt: rtt)))
        #expect(tracker.oldestOutstandingAckEliciting == nil)
    }

    @Test("While a loss deadline is set the probe timeout is not armed")
    func lossDeadlineTakesPrecedence() throws {
        let (initial, rtt, _) = try Self.threeBehind()
        var tracker = initial
        // Probe deadline would be 3 + PTO; the loss deadline (113.5 ms) wins.
        #expect(tracker.probeDeadline(rtt: rtt) != nil)
        #expect(tracker.deadline(rtt: rtt) == T.at(113) + .microseconds(500))
        // Even far past the probe deadline, the timer handles the loss first.
        let result = tracker.onTimeout(now: T.at(10_000), rtt: rtt)
        #expect(T.numbers(T.loss(result)?.packets ?? []) == [1, 2])
        #expect(tracker.probeTimeoutCount == 0)
    }

    /// Takes a first RTT sample of 100 ms at 100 ms, sends 1 at 200 ms, 2 at `secondSent`, 3...5 shortly after
    /// `secondSent`, and acknowledges `acknowledged` 100 ms after 5 was sent.
    ///
    /// The second sample is again 100 ms: variation = (3 * 50 + 0) / 4 = 37.5 ms, PTO = 100 + 150 + 25 = 275 ms,
    /// so the persistent congestion period is 3 * 275 = 825 ms.
    static func congestionScenario(
        secondSent: Instant, acknowledged: AckFrame
    ) throws -> (T.Tracker, T.Tracker.AckResult, RTTEstimator) {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        _ = try tracker.onAck(T.ack(0...0), now: T.at(100), rtt: &rtt)
        T.send(&tracker, 1, at: T.at(200))
        T.send(&tracker, 2, at: secondSent)
        T.send(&tracker, 3, at: secondSent + .milliseconds(5))
        T.send(&tracker, 4, at: secondSent + .milliseconds(10))
        T.send(&tracker, 5, at: secondSent + .milliseconds(15))
        let result = try tracker.onAck(acknowledged, now: secondSent + .milliseconds(115), rtt: &rtt)
        return (tracker, result, rtt)
    }

    @Test("Persistent congestion: two ack-eliciting losses more than 3 PTO apart, nothing acknowledged between")
    func persistentCongestion() throws {
        // 1 at 200 ms and 2 at 1025 ms + 1 ns: 825 ms + 1 ns apart > 825 ms. Both lost by the packet threshold
        // (5 >= 2 + 3); 3 and 4 were sent after the cut-off (1140 - 112.5 = 1027.5 ms < 1030 ms) and stay.
        let (tracker, result, rtt) = try Self.congestionScenario(
            secondSent: T.at(1025) + .nanoseconds(1), acknowledged: T.ack(5...5))
        #expect(rtt.probeTimeout == .milliseconds(275))
        #expect(T.numbers(result.lost) == [1, 2])
        #expect(result.loss.persistentCongestion)
        #expect(result.loss.latestSentTime == T.at(1025) + .nanoseconds(1))
        #expect(tracker.bytesInFlight == 2000)
    }

    @Test("No persistent congestion when the losses are exactly 3 PTO apart")
    func persistentCongestionBoundary() throws {
        let (_, result, _) = try Self.congestionScenario(secondSent: T.at(1025), acknowledged: T.ack(5...5))
        #expect(T.numbers(result.lost) == [1, 2])
        #expect(!result.loss.persistentCongestion)
    }

    @Test("No persistent congestion when a packet sent between the losses was acknowledged")
    func persistentCongestionInterrupted() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        _ = try tracker.onAck(T.ack(0...0), now: T.at(100), rtt: &rtt)
        T.send(&tracker, 1, at: T.at(200))
        T.send(&tracker, 2, at: T.at(600))
        T.send(&tracker, 3, at: T.at(1100))
        T.send(&tracker, 4, at: T.at(1105))
        T.send(&tracker, 5, at: T.at(1110))
        T.send(&tracker, 6, at: T.at(1115))
        // ACK of 6 and 2 at 1215 ms. Sample 100 ms, period 825 ms. Lost: 1 and 3 (6 >= 3 + 3), spanning 900 ms, but
        // 2 between them was acknowledged.
        let result = try tracker.onAck(T.ack(6...6, 2...2), now: T.at(1215), rtt: &rtt)
        #expect(T.numbers(result.lost) == [1, 3])
        #expect(!result.loss.persistentCongestion)

        // Without the acknowledgement of 2, the same losses (1, 2, 3) are persistent congestion.
        var other = T.Tracker()
        var otherRTT = RTTEstimator()
        T.send(&other, 0, at: T.at(0))
        _ = try other.onAck(T.ack(0...0), now: T.at(100), rtt: &otherRTT)
        for (number, sent) in [(1, 200), (2, 600), (3, 1100), (4, 1105), (5, 1110), (6, 1115)] as [(UInt64, Int64)] {
            T.send(&other, number, at: T.at(sent))
        }
        let control = try other.onAck(T.ack(6...6), now: T.at(1215), rtt: &otherRTT)
        #expect(T.numbers(control.lost) == [1, 2, 3])
        #expect(control.loss.persistentCongestion)
    }

    @Test("No persistent congestion from packets sent before the first RTT sample")
    func persistentCongestionNeedsPriorSample() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0))
        T.send(&tracker, 1, at: T.at(2000))
        T.send(&tracker, 2, at: T.at(4000))
        T.send(&tracker, 3, at: T.at(4001))
        // First sample (100 ms) at 4101 ms: 0 and 1 are lost 2000 ms apart (> any period), but both were sent
        // before any RTT sample existed.
        let result = try tracker.onAck(T.ack(3...3), now: T.at(4101), rtt: &rtt)
        #expect(T.numbers(result.lost) == [0, 1])
        #expect(!result.loss.persistentCongestion)
    }

    @Test("Lost pure ACK packets are reported but are no congestion event")
    func lostPureAcks() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0), bytes: 40, ackOnly: true)
        T.send(&tracker, 1, at: T.at(1))
        T.send(&tracker, 2, at: T.at(2))
        T.send(&tracker, 3, at: T.at(3))
        let result = try tracker.onAck(T.ack(3...3), now: T.at(103), rtt: &rtt)
        #expect(T.numbers(result.lost) == [0])
        #expect(result.loss.latestSentTime == nil)
        #expect(result.loss.bytesInFlight == 0)
        #expect(tracker.bytesInFlight == 2000)
    }
}
