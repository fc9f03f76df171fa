import HuddleWire

/// Spurious-loss detection and reordering adaptation for one ``SentPacketTracker`` (RFC 9002 §6.1.1 and §6.1.2
/// allow adaptive thresholds; RFC 8985 §7.2 and Linux's and quinn's "undo" are the models).
///
/// On a path that reorders, packets overtaken by later ones are declared lost although they arrive. Each such
/// spurious loss costs a retransmission and, worse, a congestion window reduction. This type:
///
/// 1. remembers the most recently declared-lost in-flight packets (at most ``ProtocolLimits/maxTrackedLostPackets``)
///    and counts a *spurious loss* when an ACK newly covers one of them;
/// 2. adapts the loss thresholds to the reordering each spurious loss revealed: the packet threshold rises to the
///    reordering distance + 1 (capped by ``ProtocolLimits/maxPacketThreshold``) and the time threshold to the
///    fraction of an RTT that would have waited for the late ACK, in eighths (capped by
///    ``ProtocolLimits/maxTimeThresholdEighths``). Both return to RFC 9002's defaults after
///    ``ProtocolLimits/reorderingDecayPeriods`` recovery periods in a row without a spurious loss;
/// 3. follows the recovery periods exactly as the congestion controllers do (one per congestion event, starting at
///    its `now`; a loss of a packet sent after that starts the next) and reports when every loss of the current
///    period turned out spurious, so the connection can undo the window reduction.
///
/// Why the time threshold grows to the measured need in one step instead of RACK's reo_wnd steps of min RTT / 4
/// per round: one spurious loss episode costs a whole window of retransmissions and a reduction, and on a jittery
/// path min RTT is small next to the spread of RTTs (5 ms latency with up to 60 ms jitter: min RTT 10 ms, RTTs up to
/// 130 ms), so quarter-min-RTT steps would need dozens of spurious episodes to catch up. The late ACK itself measures
/// exactly how long waiting would have been enough, as in Chromium's adaptive time threshold. The packet threshold
/// adapts too (as in Chromium and Linux) because on a fast path many packets are sent within the reordering delay,
/// and a threshold of 3 would keep declaring them lost whatever the time threshold.
///
/// Detection needs the peer to acknowledge late packets even below what it already saw acknowledged
/// (`ReceivedPacketTracker` does); the undo needs every loss of the period acknowledged, so a period with one real
/// loss is never undone.
struct SpuriousLossTracker: Sendable {
    /// A declared-lost in-flight packet.
    private struct LostPacket: Sendable {
        let packetNumber: UInt64
        let sentTime: Instant
        /// Whether an ACK has covered it since (it was a spurious loss, counted once).
        var acknowledged = false
    }

    /// What an ACK frame revealed about earlier losses.
    struct Outcome: Sendable {
        /// How many declared-lost packets the frame newly acknowledged.
        var spuriousLosses = 0
        /// Whether every loss of the current recovery period is now known to be spurious: the congestion
        /// controller should undo the reduction.
        var recoveryWasSpurious = false
    }

    /// The packet reordering threshold in packet numbers (RFC 9002's kPacketThreshold, adapted).
    private(set) var packetThreshold = ProtocolLimits.packetThreshold
    /// The time threshold in eighths of max(smoothed RTT, latest RTT) (RFC 9002's kTimeThreshold × 8, adapted).
    private(set) var timeThresholdEighths = ProtocolLimits.timeThresholdEighths
    /// How many spurious losses were detected in total.
    private(set) var spuriousLossCount = 0
    /// How many recovery periods (congestion events the controller reacts to) began in total.
    private(set) var recoveryPeriodCount = 0

    /// Declared-lost packets as a ring of at most ``ProtocolLimits/maxTrackedLostPackets``, oldest at `ringStart`.
    /// Packets are declared lost in increasing packet-number order (a packet is only lost together with every
    /// outstanding packet below it), so the ring is sorted and can be binary-searched.
    private var ring: [LostPacket] = []
    private var ringStart = 0

    /// When the current recovery period began, or `nil` outside one (before the first loss, after persistent
    /// congestion), exactly as the congestion controllers' recovery start.
    private var recoveryStart: Instant?
    /// The recovery start before the current period's, restored when the current period is undone (the congestion
    /// controller restores its own).
    private var previousRecoveryStart: Instant?
    /// The lowest packet number declared lost in the current period, or `nil` when the period cannot (or can no
    /// longer) be undone.
    private var recoveryFirstLost: UInt64?
    /// Losses of the current period not yet known to be spurious; the period is undone when it reaches zero.
    private var recoveryUnconfirmedLosses = 0
    /// Whether a spurious loss was detected during the current period.
    private var recoverySawSpurious = false
    /// Consecutive recovery periods that ended without a spurious loss.
    private var periodsWithoutSpurious = 0

    /// How long after sending a packet is lost once a later one is acknowledged: the time threshold × max(smoothed,
    /// latest), at least the timer granularity. Equal to `rtt.lossDelay` until a spurious loss raises the threshold.
    func lossDelay(rtt: RTTEstimator) -> Duration {
        max((max(rtt.smoothed, rtt.latest) * timeThresholdEighths) / 8, RTTEstimator.granularity)
    }

    /// Records one loss-detection pass that declared in-flight packets lost: `count` of them, the lowest numbered
    /// `firstLost`, the newest sent at `latestSentTime`. Call after ``remember(_:sentTime:)`` for each of them.
    mutating func onLosses(
        firstLost: UInt64, count: Int, latestSentTime: Instant, persistentCongestion: Bool, now: Instant
    ) {
        if recoveryStart.map({ latestSentTime > $0 }) ?? true {
            // A new congestion event, as the controller sees it: the previous period is over.
            if recoveryStart != nil {
                endPeriod()
            }
            recoveryPeriodCount += 1
            previousRecoveryStart = recoveryStart
            recoveryStart = now
            recoveryFirstLost = firstLost
            recoveryUnconfirmedLosses = 0
            recoverySawSpurious = false
        }
        recoveryUnconfirmedLosses += count
        if persistentCongestion {
            // The controller collapses to the minimum window and leaves recovery; nothing is saved to undo.
            endPeriod()
            recoveryStart = nil
            previousRecoveryStart = nil
            recoveryFirstLost = nil
        }
    }

    /// Remembers that in-flight packet `packetNumber`, sent at `sentTime`, was declared lost. Numbers must
    /// increase from call to call.
    mutating func remember(_ packetNumber: UInt64, sentTime: Instant) {
        assert(ring.isEmpty || packetNumber > self[ring.count - 1].packetNumber, "lost packets out of order")
        let lost = LostPacket(packetNumber: packetNumber, sentTime: sentTime)
        if ring.count < ProtocolLimits.maxTrackedLostPackets {
            ring.append(lost)
        } else {
            // Full: the oldest record is overwritten. If it belonged to the current period, that period can no
            // longer be proven spurious, and its unconfirmed count simply never reaches zero.
            ring[ringStart] = lost
            ringStart = ringStart + 1 == ring.count ? 0 : ringStart + 1
        }
    }

    /// Checks an ACK frame's ranges against the declared-lost packets. `previousLargestAcknowledged` is the largest
    /// acknowledged number before this frame; `now` and `rtt` (already updated with the frame's sample) measure how
    /// late the ACK came.
    mutating func onAck(
        _ ranges: AckRanges, previousLargestAcknowledged: UInt64?, now: Instant, rtt: RTTEstimator
    ) -> Outcome {
        var outcome = Outcome()
        guard !ring.isEmpty, ranges.largest >= self[0].packetNumber else { return outcome }
        // Ranges from the lowest up; most ACKs have one range and the ring is usually empty or far below it.
        for rangeIndex in stride(from: ranges.count - 1, through: 0, by: -1) {
            let range = ranges[rangeIndex]
            var index = firstIndex(atLeast: range.lowerBound)
            while index < ring.count, self[index].packetNumber <= range.upperBound {
                defer { index += 1 }
                guard !self[index].acknowledged else { continue }
                self[index].acknowledged = true
                outcome.spuriousLosses += 1
                adapt(to: self[index], previousLargestAcknowledged: previousLargestAcknowledged, now: now, rtt: rtt)
                if let first = recoveryFirstLost, self[index].packetNumber >= first {
                    recoveryUnconfirmedLosses -= 1
                }
            }
        }
        guard outcome.spuriousLosses > 0 else { return outcome }
        spuriousLossCount += outcome.spuriousLosses
        recoverySawSpurious = true
        periodsWithoutSpurious = 0
        if recoveryFirstLost != nil, recoveryUnconfirmedLosses == 0 {
            // Undone: as if the congestion event had never happened, the previous period is current again.
            outcome.recoveryWasSpurious = true
            recoveryFirstLost = nil
            recoveryStart = previousRecoveryStart
            previousRecoveryStart = nil
        }
        return outcome
    }

    // MARK: - Internals

    /// Raises the thresholds so that `lost` would not have been declared lost.
    private mutating func adapt(
        to lost: LostPacket, previousLargestAcknowledged: UInt64?, now: Instant, rtt: RTTEstimator
    ) {
        if let previousLargestAcknowledged, previousLargestAcknowledged > lost.packetNumber {
            let distance = previousLargestAcknowledged - lost.packetNumber
            packetThreshold = min(max(packetThreshold, distance + 1), ProtocolLimits.maxPacketThreshold)
        }
        let waited = (now - lost.sentTime).nanoseconds
        let base = max(max(rtt.smoothed, rtt.latest).nanoseconds, 1)
        if waited > 0 {
            // The smallest whole number of eighths strictly above the wait.
            let needed = Int(clamping: waited / base * 8 + (waited % base) * 8 / base + 1)
            timeThresholdEighths = min(max(timeThresholdEighths, needed), ProtocolLimits.maxTimeThresholdEighths)
        }
    }

    /// Ends the current recovery period: counts it towards the decay if it saw no spurious loss.
    private mutating func endPeriod() {
        if recoverySawSpurious {
            periodsWithoutSpurious = 0
            return
        }
        periodsWithoutSpurious += 1
        if periodsWithoutSpurious >= ProtocolLimits.reorderingDecayPeriods {
            // The reordering seems gone: detect real losses as fast as RFC 9002 again.
            periodsWithoutSpurious = 0
            packetThreshold = ProtocolLimits.packetThreshold
            timeThresholdEighths = ProtocolLimits.timeThresholdEighths
        }
    }

    /// The record at logical position `index` (0 is the oldest).
    private subscript(index: Int) -> LostPacket {
        get { ring[physical(index)] }
        set { ring[physical(index)] = newValue }
    }

    private func physical(_ index: Int) -> Int {
        let shifted = ringStart + index
        return shifted >= ring.count ? shifted - ring.count : shifted
    }

    /// The logical position of the first record whose number is at least `packetNumber` (`ring.count` if none).
    private func firstIndex(atLeast packetNumber: UInt64) -> Int {
        lowerBound(in: 0..<ring.count) { self[$0].packetNumber < packetNumber }
    }
}
