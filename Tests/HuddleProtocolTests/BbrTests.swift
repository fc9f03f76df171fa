import HuddleProtocol
import Testing

/// The BBR controller's state machine at its edges (issue 13), driven by synthetic delivery-rate samples: one
/// sample per round trip, each starting a new round.
@Suite("BBR congestion control")
struct BbrTests {
    static let datagram = 1200
    /// 12.5 MB/s (100 Mbit/s) at 40 ms: a 500 kB bandwidth-delay product.
    static let bandwidth = 12_500_000.0
    static let minRTT = Duration.milliseconds(40)

    /// The window target after startup on the 500 kB path: 2 BDP, the quantum, and twice the RTT variation at the
    /// bandwidth (the samples here vary only while the estimator settles).
    static func window(_ driver: Driver) -> Int {
        let jitter = Int(Bbr.jitterGain * bandwidth * Double(driver.rtt.variation.nanoseconds) / 1e9)
        return 2 * 500_000 + Bbr.quantumDatagrams * datagram + jitter + driver.bbr.extraAcknowledged
    }

    /// Feeds a controller one round trip at a time.
    struct Driver {
        var bbr = Bbr(maxDatagramSize: BbrTests.datagram, seed: 7)
        var rtt = RTTEstimator()
        var now = Instant.zero
        var delivered = 0
        var lost = 0

        /// One round trip of `rtt` delivering at `bandwidth`, losing `lossRate` of what was sent, with
        /// `inFlight` bytes in flight after the ACK (default: the controller's window).
        mutating func round(
            bandwidth: Double = BbrTests.bandwidth, rtt sample: Duration = BbrTests.minRTT, lossRate: Double = 0,
            applicationLimited: Bool = false, inFlight: Int? = nil
        ) {
            round(
                bandwidth: bandwidth, rtts: [sample], lossRate: lossRate, applicationLimited: applicationLimited,
                inFlight: inFlight)
        }

        /// One round trip acknowledged by one ACK per RTT sample in `rtts`, each delivering at `bandwidth` for
        /// its sample's length: a round whose samples differ. The last ACK acknowledges a packet sent after the
        /// round began, so it ends the round.
        mutating func round(
            bandwidth: Double = BbrTests.bandwidth, rtts: [Duration], lossRate: Double = 0,
            applicationLimited: Bool = false, inFlight: Int? = nil
        ) {
            let roundStart = delivered
            for (index, sample) in rtts.enumerated() {
                let prior = index == rtts.count - 1 ? roundStart : max(roundStart - 1, 0)
                now = now + sample / rtts.count
                rtt.update(sample: sample, ackDelay: .zero)
                let bytes = Int(bandwidth * Double(sample.nanoseconds) / 1e9) / rtts.count
                delivered += bytes
                lost += Int(Double(bytes) * lossRate / (1 - lossRate))
                let flight = inFlight ?? bbr.congestionWindow
                bbr.onDeliverySample(
                    DeliveryRateSample(
                        deliveredBytes: bytes * rtts.count, interval: sample, priorDelivered: prior,
                        totalDelivered: delivered, isApplicationLimited: applicationLimited, txInFlight: flight,
                        totalLost: lost, newlyAcknowledged: bytes),
                    bytesInFlight: flight, rtt: rtt, now: now)
            }
        }

        /// Runs startup to its end on a clean path and drains to one BDP: the controller is in probeBandwidth.
        mutating func reachProbeBandwidth() {
            for _ in 0..<12 { round() }
            round(inFlight: 400_000)
        }
    }

    @Test("Startup doubles the window per round and ends after three rounds without 25 % bandwidth growth")
    func startupEnds() {
        var driver = Driver()
        #expect(driver.bbr.mode == .startup && driver.bbr.isInSlowStart)
        let initial = driver.bbr.congestionWindow
        driver.round(bandwidth: 300_000)
        #expect(driver.bbr.congestionWindow > initial, "startup grows the window by what was acknowledged")
        var rounds = 1
        while driver.bbr.mode == .startup && rounds < 20 {
            driver.round()
            rounds += 1
        }
        // Growth stops at the second sample of the steady bandwidth; three rounds without growth then end startup.
        #expect(driver.bbr.fullBandwidthReached)
        #expect(rounds == 5, "rounds in startup: \(rounds)")
        #expect(driver.bbr.mode == .drain)
        #expect(abs(driver.bbr.pacingRate(smoothedRTT: Self.minRTT) - 0.35 * 0.99 * Self.bandwidth) < 1)
        // Drain lasts until the flight is down to one BDP.
        driver.round(inFlight: 600_000)
        #expect(driver.bbr.mode == .drain)
        driver.round(inFlight: 500_000)
        guard case .probeBandwidth(let phase) = driver.bbr.mode else {
            Issue.record("not in probeBandwidth: \(driver.bbr.mode)")
            return
        }
        #expect(phase != 1, "probing never starts in the 0.75 phase")
        #expect(driver.bbr.bandwidthDelayProduct == 500_000)
        #expect(driver.bbr.congestionWindow == Self.window(driver))
    }

    @Test("Below a 1 ms minimum RTT the pacing rate is doubled; at 1 ms and above it is gain x bandwidth")
    func hostLimitedPacing() {
        // 500 MB/s: a loopback or veth path whose bottleneck is the hosts' CPUs.
        let bandwidth = 500_000_000.0
        for (rtt, scale) in [
            (Duration.microseconds(60), 2.0), (.microseconds(999), 2.0), (.milliseconds(1), 1.0),
            (.milliseconds(40), 1.0),
        ] {
            var driver = Driver()
            for _ in 0..<12 { driver.round(bandwidth: bandwidth, rtt: rtt) }
            driver.round(bandwidth: bandwidth, rtt: rtt, inFlight: Int(bandwidth * Double(rtt.nanoseconds) / 1e9))
            #expect(driver.bbr.minRTT == rtt)
            let expected = scale * driver.bbr.pacingGain * 0.99 * bandwidth
            #expect(
                abs(driver.bbr.pacingRate(smoothedRTT: rtt) - expected) < 1,
                "min RTT \(rtt): \(driver.bbr.pacingRate(smoothedRTT: rtt)) bytes/s, expected \(expected)")
        }
    }

    @Test("Five percent random loss with no queue sets no loss bound and keeps the full rate")
    func randomLossIgnored() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        for _ in 0..<40 { driver.round(lossRate: 0.05) }
        #expect(driver.bbr.inflightHigh == nil)
        #expect(driver.bbr.bandwidth == Self.bandwidth)
        #expect(driver.bbr.backgroundLoss > 0.03)
        #expect(driver.bbr.congestionWindow == Self.window(driver))
    }

    @Test("A round losing 10 % while a queue stands sets inflight_hi to 0.7 x its flight")
    func congestionSetsTheBound() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        // A standing queue: every RTT sample at twice the minimum.
        for _ in 0..<8 { driver.round(bandwidth: Self.bandwidth, rtt: .milliseconds(80), inFlight: 900_000) }
        #expect(driver.bbr.standingQueue)
        #expect(driver.bbr.inflightHigh == nil, "queueing alone is not congestion")
        driver.round(rtt: .milliseconds(80), inFlight: 900_000)
        // Each sample ends the round it reports on: this one's 10 % loss makes its round congested.
        driver.round(rtt: .milliseconds(80), lossRate: 0.10, inFlight: 900_000)
        #expect(driver.bbr.inflightHigh == 630_000)
        #expect(driver.bbr.congestionWindow <= 630_000)
        // A later round that fills the bound without congestion raises it by an eighth.
        driver.round(rtt: .milliseconds(80), inFlight: 630_000)
        #expect(driver.bbr.inflightHigh == 630_000 + 630_000 / 8)
        // Losses later proved spurious undo the cut (here: back to no bound).
        driver.bbr.onSpuriousCongestionEvent()
        #expect(driver.bbr.inflightHigh == nil)
    }

    @Test("Congestion loss in startup ends startup at once")
    func congestionEndsStartup() {
        var driver = Driver()
        for _ in 0..<3 { driver.round(bandwidth: Double(1 << 20)) }
        for _ in 0..<6 { driver.round(bandwidth: Double(2 << 20), rtt: .milliseconds(90)) }
        #expect(driver.bbr.mode == .startup || driver.bbr.mode == .drain)
        var driverLoss = driver
        driverLoss.round(bandwidth: Double(4 << 20), rtt: .milliseconds(90), lossRate: 0.2)
        driverLoss.round(bandwidth: Double(4 << 20), rtt: .milliseconds(90))
        #expect(driverLoss.bbr.fullBandwidthReached)
        #expect(driverLoss.bbr.inflightHigh != nil)
    }

    @Test("Application-limited samples never lower the bandwidth estimate, and count when they raise it")
    func applicationLimitedSamples() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        for _ in 0..<20 { driver.round(bandwidth: 1_000_000, applicationLimited: true) }
        #expect(driver.bbr.bandwidth == Self.bandwidth)
        // Without the application limit the old maximum ages out after ten rounds.
        for _ in 0..<11 { driver.round(bandwidth: 1_000_000) }
        #expect(driver.bbr.bandwidth == 1_000_000)
        driver.round(bandwidth: 2_000_000, applicationLimited: true)
        #expect(driver.bbr.bandwidth == 2_000_000)
    }

    @Test("After 5 s without a lower RTT, probeRTT holds half a BDP for 200 ms and a round, then probing resumes")
    func probeRTT() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        let refreshed = driver.now
        // Rounds at a slightly higher RTT: the minimum is never refreshed, and probeRTT comes 5 s after it was.
        while driver.bbr.mode != .probeRTT && driver.now < refreshed + .seconds(8) {
            driver.round(rtt: .milliseconds(41), inFlight: 500_000)
        }
        #expect(driver.bbr.mode == .probeRTT)
        #expect(driver.now - refreshed > Bbr.minRTTFilterLength)
        #expect(driver.now - refreshed <= Bbr.minRTTFilterLength + .milliseconds(41))
        #expect(driver.bbr.congestionWindow == driver.bbr.bandwidthDelayProduct! / 2)
        // The flight drains to the small window; 200 ms and a round later probing resumes.
        let entered = driver.now
        while driver.bbr.mode == .probeRTT && driver.now < entered + .seconds(1) {
            driver.round(rtt: .milliseconds(41), inFlight: 200_000)
        }
        guard case .probeBandwidth = driver.bbr.mode else {
            Issue.record("still \(driver.bbr.mode)")
            return
        }
        #expect(driver.now - entered >= .milliseconds(200))
        #expect(driver.now - entered < .milliseconds(400))
        #expect(driver.bbr.minRTT == .milliseconds(41), "the minimum measured again")
    }

    @Test("Probing up ends at 1.25 BDP in flight; the 0.75 phase ends early at one BDP")
    func probeBandwidthPhases() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        var sawUp = false
        var sawDown = false
        for _ in 0..<40 {
            guard case .probeBandwidth(let phase) = driver.bbr.mode else { break }
            switch phase {
            case 0:
                sawUp = true
                #expect(abs(driver.bbr.pacingRate(smoothedRTT: Self.minRTT) - 1.25 * 0.99 * Self.bandwidth) < 1)
                // A sample more than a minimum RTT into the phase, with 1.25 BDP in flight.
                driver.round(rtt: .milliseconds(41), inFlight: 625_000)
                if case .probeBandwidth(let next) = driver.bbr.mode { #expect(next == 1) }
            case 1:
                sawDown = true
                // Ends on the first sample with one BDP in flight, even before a full minimum RTT.
                driver.now = driver.now - .milliseconds(30)
                driver.round(rtt: .milliseconds(40), inFlight: 500_000)
                if case .probeBandwidth(let next) = driver.bbr.mode { #expect(next == 2) }
            default:
                driver.round(inFlight: 500_000)
            }
        }
        #expect(sawUp && sawDown)
    }

    @Test("Loss periods pool short rounds until 100 datagrams; no period is judged before the fifth")
    func lossPeriods() {
        // 20 % random loss from the first round on a jittery path (a relay that reorders): half of each round's
        // samples take three times the minimum RTT. The periods after startup learn a 20 % background, so no later
        // period is judged congested for it.
        var fresh = Driver()
        fresh.round(bandwidth: 3_000_000, lossRate: 0.2)
        for _ in 0..<12 {
            fresh.round(
                bandwidth: 3_000_000, rtts: [.milliseconds(40), .milliseconds(120)], lossRate: 0.2,
                inFlight: 500_000)
        }
        #expect(fresh.bbr.lossPeriods == 13)
        #expect(fresh.bbr.fullBandwidthReached)
        #expect(!fresh.bbr.standingQueue, "jitter is not a standing queue")
        #expect(abs(fresh.bbr.backgroundLoss - 0.2) < 0.01)
        #expect(fresh.bbr.inflightHigh == nil)

        var driver = Driver()
        driver.reachProbeBandwidth()
        let before = driver.bbr.lossPeriods
        #expect(before >= Bbr.learningLossPeriods)
        // 48 kB rounds (40 datagrams): the third completes a period of 120 datagrams.
        driver.round(bandwidth: 1_200_000, inFlight: 50_000)
        driver.round(bandwidth: 1_200_000, inFlight: 50_000)
        #expect(driver.bbr.lossPeriods == before)
        driver.round(bandwidth: 1_200_000, inFlight: 50_000)
        #expect(driver.bbr.lossPeriods == before + 1)
    }

    @Test("A jittery path gets twice the RTT variation at the bandwidth on top of two BDPs")
    func jitterAllowance() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        for index in 0..<20 { driver.round(rtt: .milliseconds(index % 2 == 0 ? 40 : 80), inFlight: 500_000) }
        #expect(driver.rtt.variation > .milliseconds(10))
        #expect(driver.bbr.minRTT == Self.minRTT)
        #expect(driver.bbr.congestionWindow == Self.window(driver))
        #expect(driver.bbr.congestionWindow > 2 * 500_000 + 250_000)
    }

    @Test("A standing queue caps the window at one BDP outside probing up; a period without one restores two")
    func standingQueueWindow() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        let bdp = 500_000
        var capped = 0
        var probing = 0
        for _ in 0..<24 {
            // Every sample of every round 20 ms above the 40 ms minimum: more than a quarter plus 2 ms.
            driver.round(rtt: .milliseconds(60), inFlight: bdp)
            guard case .probeBandwidth(let phase) = driver.bbr.mode else { continue }
            #expect(driver.bbr.standingQueue)
            let jitter = Int(Bbr.jitterGain * Self.bandwidth * Double(driver.rtt.variation.nanoseconds) / 1e9)
            if Bbr.probeBandwidthGains[phase] > 1 {
                probing += 1
                #expect(driver.bbr.congestionWindow > 2 * bdp, "probing up keeps two BDPs")
            } else {
                capped += 1
                #expect(driver.bbr.congestionWindow == bdp + Bbr.quantumDatagrams * Self.datagram + jitter)
            }
        }
        #expect(capped >= 16 && probing >= 1)
        // A queue only 1 ms deep is not a standing queue (it needs a quarter of the minimum plus 2 ms, 12 ms here),
        // and a round with one sample at the minimum shows the queue drained.
        driver.round(rtt: .milliseconds(51), inFlight: bdp)
        #expect(!driver.bbr.standingQueue)
        driver.round(rtts: [.milliseconds(90), .milliseconds(40), .milliseconds(90)], inFlight: bdp)
        #expect(!driver.bbr.standingQueue)
        driver.round(inFlight: bdp)
        #expect(driver.bbr.congestionWindow == Self.window(driver))
    }

    @Test("A loss burst on a jittery path without a standing queue is not congestion, whatever the smoothed RTT")
    func jitterIsNotAQueue() {
        var driver = Driver()
        driver.reachProbeBandwidth()
        // Half of every round's samples take three times the minimum: the smoothed RTT doubles, but the lowest
        // sample of each period stays at the minimum.
        let jittery: [Duration] = [.milliseconds(40), .milliseconds(120)]
        for _ in 0..<8 { driver.round(rtts: jittery, inFlight: 900_000) }
        #expect(driver.rtt.smoothed > .milliseconds(65))
        driver.round(rtts: jittery, lossRate: 0.10, inFlight: 900_000)
        #expect(!driver.bbr.standingQueue)
        #expect(driver.bbr.inflightHigh == nil, "a 10 % burst without a queue is not congestion")
        // The same burst while every sample shows a queue is.
        for _ in 0..<2 { driver.round(rtt: .milliseconds(120), inFlight: 900_000) }
        driver.round(rtt: .milliseconds(120), lossRate: 0.10, inFlight: 900_000)
        #expect(driver.bbr.standingQueue)
        #expect(driver.bbr.inflightHigh == 630_000)
    }
}
