import HuddleProtocol
import Testing

@Suite("RTT estimation (RFC 9002 §5)")
struct RTTEstimatorTests {
    @Test("Before any sample the estimator assumes 333 ms")
    func initial() {
        let rtt = RTTEstimator()
        #expect(!rtt.hasSample)
        #expect(rtt.smoothed == .milliseconds(333))
        #expect(rtt.variation == .microseconds(166_500))
        // PTO = 333 + max(4 * 166.5, 1) + 25 = 1024 ms.
        #expect(rtt.probeTimeout == .milliseconds(1024))
    }

    @Test("The first sample sets smoothed = sample and variation = sample / 2")
    func firstSample() {
        var rtt = RTTEstimator()
        rtt.update(sample: .milliseconds(100), ackDelay: .milliseconds(10))
        #expect(rtt.smoothed == .milliseconds(100))
        #expect(rtt.variation == .milliseconds(50))
        #expect(rtt.minimum == .milliseconds(100))
        #expect(rtt.lossDelay == .microseconds(112_500))
    }

    @Test("Later samples subtract ack delay only when that stays above the minimum")
    func ackDelayAdjustment() {
        var rtt = RTTEstimator()
        rtt.update(sample: .milliseconds(100), ackDelay: .zero)
        // 140 >= 100 + 20, so the adjusted sample is 120: variation = (3*50 + 20)/4 = 42.5, smoothed = (700+120)/8.
        rtt.update(sample: .milliseconds(140), ackDelay: .milliseconds(20))
        #expect(rtt.smoothed == .microseconds(102_500))
        #expect(rtt.variation == .microseconds(42_500))
        // 110 < 100 + 20: the delay is ignored, adjusted = 110.
        rtt.update(sample: .milliseconds(110), ackDelay: .milliseconds(20))
        #expect(rtt.smoothed == .nanoseconds((102_500_000 * 7 + 110_000_000) / 8))
        #expect(rtt.latest == .milliseconds(110))
    }

    @Test("Ack delay is capped at max_ack_delay and the minimum tracks the smallest sample")
    func maxAckDelayCap() {
        var rtt = RTTEstimator(maxAckDelay: .milliseconds(25))
        rtt.update(sample: .milliseconds(50), ackDelay: .zero)
        rtt.update(sample: .milliseconds(300), ackDelay: .milliseconds(200))
        // Adjusted = 300 - 25 (capped) = 275.
        #expect(rtt.smoothed == .nanoseconds((50_000_000 * 7 + 275_000_000) / 8))
        rtt.update(sample: .milliseconds(20), ackDelay: .zero)
        #expect(rtt.minimum == .milliseconds(20))
    }

    @Test("The probe timeout never uses less than the 1 ms granularity for variation")
    func granularityFloor() {
        var rtt = RTTEstimator(maxAckDelay: .zero)
        for _ in 0..<100 { rtt.update(sample: .microseconds(100), ackDelay: .zero) }
        #expect(rtt.probeTimeout >= .milliseconds(1))
        #expect(rtt.lossDelay == .milliseconds(1))
    }
}
