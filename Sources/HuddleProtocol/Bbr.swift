/// A delivery-rate congestion controller modelled on BBR (Cardwell et al.; Linux `tcp_bbr.c`, the IETF BBRv3
/// draft), Huddle's default: it paces at the path's measured bottleneck bandwidth and keeps about two
/// bandwidth-delay products in flight, so random loss (Wi-Fi, mobile) does not shrink its rate the way it shrinks a
/// loss-based window.
///
/// The model, from the ``DeliveryRateSample`` of every ACK:
/// - **bandwidth**: the largest delivery rate over the last ``bandwidthFilterRounds`` round trips (samples marked
///   application-limited count only when they raise it);
/// - **minimum RTT**: the smallest RTT sample in the last ``minRTTFilterLength``;
/// - **standing queue**: a loss period (rounds pooled until they carried ``lossPeriodDatagrams`` datagrams) whose
///   *lowest* RTT sample exceeds the minimum RTT by a quarter of it plus ``queueingEvidence``: a queue that never
///   drained, which jitter and delayed ACKs (raising only some samples) do not mimic;
/// - **background loss**: the loss rate of the path, the mean over the first loss periods and then a moving average
///   (weight ``backgroundLossWeight``);
/// - **inflight_hi** (BBRv3's loss bound): unset until a loss period shows congestion, then 0.7 × the most that
///   period had in flight, never below one bandwidth-delay product. A period is congested, once
///   ``learningLossPeriods`` periods taught the background, when it loses more than ``lossThreshold`` *beyond the
///   background loss* of its data (at least ``minimumCongestionLossDatagrams``, and ``congestionDeviations`` standard
///   deviations more than the background explains) **and** shows a standing queue. Random loss raises the
///   background, not the verdict: a path that drops 5 % of packets at random keeps its rate, while a queue that
///   overflows adds a burst above it.
///
/// The state machine:
/// - **startup**: pacing gain 2.77 (4 ln 2) and window gain 2, until the bandwidth grows less than 25 % in three
///   round trips that were not application-limited, or a round shows congestion loss;
/// - **drain**: pacing gain 0.35 until what is in flight is at most one bandwidth-delay product;
/// - **probeBandwidth**: eight phases of one minimum RTT each, with pacing gains 1.25 (probe up; lasts until the
///   flight reaches 1.25 BDP or loss appears, at most two minimum RTTs), 0.75 (drain what probing queued; ends
///   early at 1 BDP), then six of 1.0; the first phase is chosen from the seed (never 0.75), so flows sharing a link
///   do not probe in step;
/// - **probeRTT**: when the minimum RTT is ``minRTTFilterLength`` old, the window drops to half a BDP for
///   ``probeRTTDuration`` and one round trip, so queues drain and the minimum is measured again.
///
/// Window: 2 × BDP plus ``quantumDatagrams`` datagrams, plus ``jitterGain`` × bandwidth × RTT variation (so a
/// jittery path's late ACKs do not drain the pipe), plus after startup the ACK aggregation seen in the last
/// ``ackAggregationRounds`` rounds (BBR's extra_acked: what arrived in ACK batches beyond the bandwidth), and at most
/// inflight_hi. After a period with a standing queue, in the probeBandwidth phases that do not probe up, one BDP
/// (plus the quantum and the jitter term) replaces the two BDPs and the aggregation: flows that share a queue then
/// drain it instead of each keeping up to a BDP in it, which is what made them unfair to each other and to CUBIC.
/// The window grows by the acknowledged bytes toward that target (so startup doubles it each round trip) and never
/// falls below ``minimumWindowDatagrams`` datagrams. Before the first sample it is the RFC 9002 initial window.
///
/// Pacing rate: the mode's gain × bandwidth × (1 − ``pacingMargin``), doubled while the minimum RTT is below
/// ``hostLimitedMinRTT`` (a path whose bottleneck is the hosts' CPUs; see ``hostLimitedPacingScale``).
///
/// Loss still triggers retransmission (RFC 9002 recovery is unchanged); only the rate and window respond differently.
public struct Bbr: CongestionController {
    /// Where the controller is in its cycle.
    public enum Mode: Sendable, Hashable {
        /// Exponential search for the bottleneck bandwidth.
        case startup
        /// Emptying the queue startup built.
        case drain
        /// Steady state, cycling through pacing gains; `phase` indexes ``Bbr/probeBandwidthGains``.
        case probeBandwidth(phase: Int)
        /// A short low-window period to measure the minimum RTT again.
        case probeRTT
    }

    /// Startup's pacing gain, 4 ln 2 (BBRv3's 2.77): doubles the sending rate every round trip.
    public static let startupPacingGain = 2.77
    /// Startup's and probeBandwidth's window gain.
    public static let windowGain = 2.0
    /// Drain's pacing gain (BBRv3's 0.35).
    public static let drainPacingGain = 0.35
    /// probeBandwidth's pacing gains, one phase each.
    public static let probeBandwidthGains: [Double] = [1.25, 0.75, 1, 1, 1, 1, 1, 1]
    /// How many round trips the bandwidth filter remembers.
    public static let bandwidthFilterRounds = 10
    /// How long a minimum RTT stays valid before probeRTT measures it again.
    public static let minRTTFilterLength: Duration = .seconds(5)
    /// How long probeRTT holds the small window (at least one round trip too).
    public static let probeRTTDuration: Duration = .milliseconds(200)
    /// The loss rate (lost / (delivered + lost) in one loss period) beyond the background loss above which a period
    /// with queueing counts as congested: BBRv3's 2 %.
    public static let lossThreshold = 0.02
    /// The fewest datagrams a loss period must lose to count as congested (BBRv3 also waits for several loss events): one
    /// loss in a ten-packet flight is 10 % but says nothing.
    public static let minimumCongestionLossDatagrams = 3
    /// Loss periods that only teach the background loss before any can be judged congested.
    public static let learningLossPeriods = 4
    /// The fewest datagrams (delivered or lost) a loss period spans: rounds are pooled until they carried this many.
    public static let lossPeriodDatagrams = 100
    /// How many standard deviations above the background expectation a period's losses must be to be congestion.
    public static let congestionDeviations = 4.0
    /// The weight of each loss period in the background loss average (after the first periods' plain mean).
    public static let backgroundLossWeight = 1.0 / 16
    /// A standing queue: a loss period's lowest RTT sample exceeds the minimum RTT by 1 / ``queueingFraction`` of it
    /// plus this much.
    public static let queueingEvidence: Duration = .milliseconds(2)
    /// See ``queueingEvidence``: 4, a quarter of the minimum RTT.
    public static let queueingFraction: Int64 = 4
    /// inflight_hi after congestion: this fraction of the period's largest flight (BBRv3's beta).
    public static let lossBeta = 0.7
    /// Startup ends after this many round trips without 25 % bandwidth growth.
    public static let fullBandwidthRounds = 3
    /// The smallest window, in datagrams.
    public static let minimumWindowDatagrams = 4
    /// Datagrams added to the window target to absorb ACK aggregation (delayed and stretched ACKs).
    public static let quantumDatagrams = 4
    /// The window covers this many RTT variations (RFC 9002's rttvar) at the bandwidth on top of 2 BDP.
    public static let jitterGain = 2.0
    /// How many round trips the ACK-aggregation estimate remembers its largest value.
    public static let ackAggregationRounds = 10
    /// Pacing runs this much below the estimate so a queue left by probing drains (BBRv3's 1 %).
    public static let pacingMargin = 0.01
    /// Below this minimum RTT the path is treated as host-limited and paced at ``hostLimitedPacingScale`` times the
    /// usual rate (msquic stops pacing below the same 1 ms).
    public static let hostLimitedMinRTT: Duration = .milliseconds(1)
    /// The pacing rate's multiplier on a host-limited path (see ``hostLimitedMinRTT``).
    ///
    /// Within a millisecond the bottleneck is the hosts' CPUs (loopback, a veth, one switch), not a router's queue:
    /// the delivery rate the model measures is what the sender managed to produce, so pacing at it holds the sender
    /// to its own last speed. It then sleeps whenever it gets ahead, every wake-up costs a timer, an epoll wait and
    /// the ACKs read one at a time, and the sender's CPU per byte rises 15 % (measured on loopback: 5,000 wake-ups
    /// per GiB against CUBIC's 200), which lowers the next samples. Twice the rate leaves pacing as a spreader of
    /// bursts while the window (2 BDP, which such a path's queues hold easily) bounds what is in flight.
    public static let hostLimitedPacingScale = 2.0

    /// The largest datagram the connection sends.
    public let maxDatagramSize: Int
    public private(set) var congestionWindow: Int
    /// The current mode.
    public private(set) var mode: Mode = .startup
    /// The bandwidth estimate in bytes per second (0 before the first sample).
    public private(set) var bandwidth: Double = 0
    /// The minimum RTT estimate (`nil` before the first sample).
    public private(set) var minRTT: Duration?
    /// BBRv3's inflight_hi: the most bytes in flight the path carried without congestion loss (`nil`: no bound yet).
    public private(set) var inflightHigh: Int?
    /// Round trips counted so far (a round ends when a packet sent after its start is acknowledged).
    public private(set) var roundCount = 0
    /// The background loss rate: a moving average of every loss period's loss rate.
    public private(set) var backgroundLoss = 0.0
    /// Loss periods measured so far.
    public private(set) var lossPeriods = 0
    /// Whether startup found the bottleneck bandwidth.
    public private(set) var fullBandwidthReached = false
    /// Whether the last loss period showed a standing queue: even its lowest RTT sample exceeded the minimum RTT by a
    /// quarter plus ``queueingEvidence``.
    public private(set) var standingQueue = false

    private var bandwidthFilter = RoundMaxFilter<Double>(rounds: Bbr.bandwidthFilterRounds)
    /// BBR's extra_acked: bytes acknowledged beyond what the bandwidth explains since an aggregation epoch began,
    /// the largest per round over the last rounds. ACKs that arrive in batches (delayed ACKs, a receiver that is
    /// descheduled for a millisecond) need that much more window to keep the pipe full between batches.
    private var extraAckedFilter = RoundMaxFilter<Int>(rounds: Bbr.ackAggregationRounds)
    private var ackEpochStart: Instant?
    private var ackEpochAcknowledged = 0
    private var minRTTStamp: Instant?
    private var nextRoundDelivered = 0
    private var fullBandwidth: Double = 0
    private var fullBandwidthCount = 0
    private var phaseStart: Instant?
    private var lostInPhase = false
    private var probeRTTDoneAt: Instant?
    private var probeRTTRoundDone = false
    /// The current loss period's statistics (rounds pooled to ``lossPeriodDatagrams``), for the loss bound.
    private var roundStartDelivered = 0
    private var roundStartLost = 0
    /// The lowest RTT sample of the current loss period: above the minimum RTT, a queue stood all period.
    private var periodMinRTT: Duration?
    private var rttVariation: Duration = .zero
    private var roundMaxInflight = 0
    /// inflight_hi before the last cut, restored if the losses prove spurious.
    private var inflightHighBeforeCut: Int??
    private var random: UInt64

    /// A controller at the RFC 9002 initial window; `seed` picks the first probeBandwidth phase (connections use
    /// their own, so flows sharing a link do not probe in lockstep).
    public init(maxDatagramSize: Int, seed: UInt64 = 0) {
        self.maxDatagramSize = maxDatagramSize
        congestionWindow = CongestionWindowLimits.initialWindow(maxDatagramSize: maxDatagramSize)
        random = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    }

    public var isInSlowStart: Bool { mode == .startup }

    /// The pacing gain of the current mode.
    public var pacingGain: Double {
        switch mode {
        case .startup: return Self.startupPacingGain
        case .drain: return Self.drainPacingGain
        case .probeBandwidth(let phase): return Self.probeBandwidthGains[phase]
        case .probeRTT: return 1
        }
    }

    /// The bandwidth-delay product of the model, or `nil` before both estimates exist.
    public var bandwidthDelayProduct: Int? {
        guard bandwidth > 0, let minRTT else { return nil }
        return Int(bandwidth * Double(minRTT.nanoseconds) / 1e9)
    }

    public func pacingRate(smoothedRTT: Duration) -> Double {
        guard bandwidth > 0 else {
            // No sample yet: the initial window over the RTT we assume, at startup's gain.
            return Pacer.windowRate(
                congestionWindow: congestionWindow, smoothedRTT: smoothedRTT, gain: Self.startupPacingGain)
        }
        let scale = minRTT.map { $0 < Self.hostLimitedMinRTT } == true ? Self.hostLimitedPacingScale : 1
        return scale * pacingGain * bandwidth * (1 - Self.pacingMargin)
    }

    // Window-based callbacks: the model comes from delivery samples instead.

    public mutating func onAcknowledged(bytes: Int, sentTime: Instant, rtt: RTTEstimator, now: Instant) {}

    public mutating func onCongestionEvent(sentTime: Instant, now: Instant) {
        lostInPhase = true
    }

    public mutating func onPersistentCongestion(now: Instant) {
        // Every packet over several probe timeouts was lost: start again from the minimum window (RFC 9002 §7.6);
        // the model stays, so the window climbs back toward it within round trips.
        congestionWindow = minimumWindow
    }

    public mutating func onSpuriousCongestionEvent() {
        if let saved = inflightHighBeforeCut {
            inflightHigh = saved
            inflightHighBeforeCut = nil
        }
    }

    public mutating func onDeliverySample(
        _ sample: DeliveryRateSample, bytesInFlight: Int, rtt: RTTEstimator, now: Instant
    ) {
        rttVariation = rtt.variation
        // Before the round check: the ACK that ends a round acknowledges a packet sent during it, so its RTT shows
        // that round's queue.
        if rtt.latest > .zero { periodMinRTT = min(periodMinRTT ?? rtt.latest, rtt.latest) }
        roundMaxInflight = max(roundMaxInflight, sample.txInFlight)
        let roundStarted = sample.priorDelivered >= nextRoundDelivered
        if roundStarted {
            endRound(sample: sample)
        }
        updateBandwidth(sample)
        updateAckAggregation(acknowledged: sample.newlyAcknowledged, now: now)
        updateMinRTT(rtt.latest, now: now)
        if roundStarted, mode == .startup { checkFullBandwidth(sample) }
        advanceMode(bytesInFlight: bytesInFlight, roundStarted: roundStarted, now: now)
        updateWindow(acknowledged: sample.newlyAcknowledged)
    }

    // MARK: - Model

    private var minimumWindow: Int { Self.minimumWindowDatagrams * maxDatagramSize }

    private mutating func endRound(sample: DeliveryRateSample) {
        roundCount += 1
        nextRoundDelivered = sample.totalDelivered
        let delivered = sample.totalDelivered - roundStartDelivered
        let lost = sample.totalLost - roundStartLost
        // On a path with a sub-millisecond round trip a round carries a handful of datagrams, and losses are declared
        // in lumps (a loss timer declares several at once): the loss check waits until a period of whole rounds
        // carried enough datagrams to measure a rate.
        guard delivered + lost >= Self.lossPeriodDatagrams * maxDatagramSize else { return }
        let lossRate = Double(lost) / Double(delivered + lost)
        // A standing queue raises every RTT sample of the period, so its *lowest* sample shows it; jitter (Wi-Fi, a
        // relay that reorders) and delayed ACKs raise only some samples, and a probe's brief queue drains within it.
        let queueing =
            minRTT.map { floor in
                (periodMinRTT ?? floor) > floor + floor / Self.queueingFraction + Self.queueingEvidence
            } ?? false
        // Losses beyond what the background rate explains: more than 4 standard deviations of a binomial draw at
        // that rate, so a period losing a little more than usual by chance is not congestion.
        let sentDatagrams = Double(delivered + lost) / Double(maxDatagramSize)
        let background = max(backgroundLoss, 0.005)
        let expected = background * sentDatagrams
        let deviation = (background * (1 - background) * sentDatagrams).squareRoot()
        let lostDatagrams = Double(lost) / Double(maxDatagramSize)
        // The first periods only teach the background: a path that loses 20 % at random must not be judged
        // congested before its background is known.
        let congested =
            lossPeriods >= Self.learningLossPeriods && queueing
            && lost >= Self.minimumCongestionLossDatagrams * maxDatagramSize
            && lossRate > backgroundLoss + Self.lossThreshold
            && lostDatagrams > expected + Self.congestionDeviations * deviation
        standingQueue = queueing
        // A plain mean over the first periods (so the learning periods give the path's rate at once), then a
        // moving average.
        lossPeriods += 1
        backgroundLoss += max(Self.backgroundLossWeight, 1 / Double(lossPeriods)) * (lossRate - backgroundLoss)
        if congested {
            onCongestedPeriod()
        } else if case .probeBandwidth(let phase) = mode, let high = inflightHigh,
            roundMaxInflight >= high - 2 * maxDatagramSize
        {
            // A period that filled inflight_hi without congestion loss: the path carries more, so the bound rises
            // (doubling while probing up, by an eighth otherwise).
            inflightHigh = high + (Self.probeBandwidthGains[phase] > 1 ? high : max(high / 8, maxDatagramSize))
        }
        roundStartDelivered = sample.totalDelivered
        roundStartLost = sample.totalLost
        roundMaxInflight = 0
        periodMinRTT = nil
    }

    /// A round trip lost more than the threshold while a queue stood: congestion, not random loss.
    private mutating func onCongestedPeriod() {
        inflightHighBeforeCut = .some(inflightHigh)
        let floor = max(bandwidthDelayProduct ?? minimumWindow, minimumWindow)
        inflightHigh = max(Int(Self.lossBeta * Double(roundMaxInflight)), floor)
        if mode == .startup {
            fullBandwidthReached = true
        }
    }

    private mutating func updateBandwidth(_ sample: DeliveryRateSample) {
        let rate = sample.bytesPerSecond
        // An application-limited sample only says the path carries at least this much.
        guard !sample.isApplicationLimited || rate >= bandwidth else { return }
        bandwidthFilter.update(rate, round: roundCount)
        bandwidth = bandwidthFilter.maximum ?? 0
    }

    /// The largest ACK aggregation of the last ``ackAggregationRounds`` rounds, in bytes.
    public var extraAcknowledged: Int { extraAckedFilter.maximum ?? 0 }

    private mutating func updateAckAggregation(acknowledged: Int, now: Instant) {
        guard bandwidth > 0 else { return }
        let start = ackEpochStart ?? now
        let expected = Int(bandwidth * Double((now - start).nanoseconds) / 1e9)
        // An epoch ends when the ACKs fell behind the bandwidth (no aggregation), or grew implausibly large.
        if ackEpochStart == nil || ackEpochAcknowledged <= expected || ackEpochAcknowledged >= 1 << 22 {
            ackEpochStart = now
            ackEpochAcknowledged = acknowledged
            return
        }
        ackEpochAcknowledged += acknowledged
        extraAckedFilter.update(min(ackEpochAcknowledged - expected, congestionWindow), round: roundCount)
    }

    private mutating func updateMinRTT(_ sample: Duration, now: Instant) {
        let expired = minRTTStamp.map { now - $0 > Self.minRTTFilterLength } ?? true
        if sample > .zero, sample <= (minRTT ?? sample) || (expired && mode == .probeRTT) || minRTT == nil {
            minRTT = sample
            minRTTStamp = now
        }
    }

    private mutating func checkFullBandwidth(_ sample: DeliveryRateSample) {
        guard !fullBandwidthReached, !sample.isApplicationLimited else { return }
        if bandwidth >= fullBandwidth * 1.25 {
            fullBandwidth = bandwidth
            fullBandwidthCount = 0
            return
        }
        fullBandwidthCount += 1
        if fullBandwidthCount >= Self.fullBandwidthRounds { fullBandwidthReached = true }
    }

    private mutating func advanceMode(bytesInFlight: Int, roundStarted: Bool, now: Instant) {
        let bdp = bandwidthDelayProduct ?? congestionWindow
        switch mode {
        case .startup:
            if fullBandwidthReached { mode = .drain }
        case .drain:
            if bytesInFlight <= bdp { enterProbeBandwidth(now: now) }
        case .probeBandwidth(let phase):
            let gain = Self.probeBandwidthGains[phase]
            let fullLength = phaseStart.map { now - $0 > (minRTT ?? .zero) } ?? true
            let advance: Bool
            if gain > 1 {
                // Probing ends once the flight reached its target or loss appeared, and after two minimum RTTs in
                // any case: a sender held by flow control never reaches the target.
                let overdue = phaseStart.map { now - $0 > (minRTT ?? .zero) * 2 } ?? true
                advance = overdue || fullLength && (lostInPhase || Double(bytesInFlight) >= gain * Double(bdp))
            } else if gain < 1 {
                advance = fullLength || bytesInFlight <= bdp
            } else {
                advance = fullLength
            }
            if advance {
                mode = .probeBandwidth(phase: (phase + 1) % Self.probeBandwidthGains.count)
                phaseStart = now
                lostInPhase = false
            }
        case .probeRTT:
            if probeRTTDoneAt == nil, bytesInFlight <= probeRTTWindow {
                probeRTTDoneAt = now + Self.probeRTTDuration
                probeRTTRoundDone = false
            } else if roundStarted {
                probeRTTRoundDone = true
            }
            if let done = probeRTTDoneAt, probeRTTRoundDone, now >= done {
                minRTTStamp = now
                probeRTTDoneAt = nil
                if fullBandwidthReached { enterProbeBandwidth(now: now) } else { mode = .startup }
            }
        }
        if mode != .probeRTT, let stamp = minRTTStamp, now - stamp > Self.minRTTFilterLength {
            mode = .probeRTT
            probeRTTDoneAt = nil
        }
    }

    private mutating func enterProbeBandwidth(now: Instant) {
        // A pseudo-random first phase, never the 0.75 one (xorshift: the core owns no system RNG).
        random ^= random << 13
        random ^= random >> 7
        random ^= random << 17
        var phase = Int(random % UInt64(Self.probeBandwidthGains.count - 1))
        if phase >= 1 { phase += 1 }
        mode = .probeBandwidth(phase: phase)
        phaseStart = now
        lostInPhase = false
    }

    private var probeRTTWindow: Int { max((bandwidthDelayProduct ?? congestionWindow) / 2, minimumWindow) }

    private mutating func updateWindow(acknowledged: Int) {
        guard let bdp = bandwidthDelayProduct else {
            congestionWindow += acknowledged
            return
        }
        var target: Int
        if standingQueue, case .probeBandwidth(let phase) = mode, Self.probeBandwidthGains[phase] <= 1 {
            // A queue that stood through a whole period means the flows on this path together keep more in flight
            // than the pipe holds: each one's max-filtered bandwidth overestimates its share. Two BDPs each would let
            // every flow keep up to a BDP queued, the flows with the larger windows keep most of it, and a loss-based
            // flow's bursts meet a full buffer. One BDP fills the pipe by the model's own account (the queue covers
            // ACK aggregation), so outside probing up the window stays there until a period shows no queue.
            target = bdp + Self.quantumDatagrams * maxDatagramSize
        } else {
            target = Int(Self.windowGain * Double(bdp)) + Self.quantumDatagrams * maxDatagramSize
            if fullBandwidthReached { target += extraAcknowledged }
        }
        // Jitter: on a path whose RTT varies (Wi-Fi, a relay that reorders), a window of 2 x bandwidth x the minimum
        // RTT drains between late ACKs; the delivery rate then measures the window, not the path, and falls with it.
        target += Int(Self.jitterGain * bandwidth * Double(rttVariation.nanoseconds) / 1e9)
        if fullBandwidthReached {
            congestionWindow = min(congestionWindow + acknowledged, target)
        } else if congestionWindow < target {
            congestionWindow += acknowledged
        }
        if let inflightHigh { congestionWindow = min(congestionWindow, inflightHigh) }
        if mode == .probeRTT { congestionWindow = min(congestionWindow, probeRTTWindow) }
        congestionWindow = max(congestionWindow, minimumWindow)
    }
}
