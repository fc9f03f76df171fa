import HuddleWire

/// The send side of loss recovery for one packet-number space: remembers every packet sent until it is
/// acknowledged or declared lost, and runs RFC 9002 §6 loss detection and the probe timeout.
///
/// `Record` is whatever the connection needs back when a packet is acknowledged or lost, typically the frames to
/// retransmit. The connection:
/// - checks ``canSend`` before building a packet, and calls ``onSent(_:bytes:ackEliciting:inFlight:record:now:)``
///   for every packet it sends, with strictly increasing packet numbers (numbers may be skipped; an ACK for a
///   skipped number is then a protocol violation);
/// - passes every received ACK frame to ``onAck(_:now:rtt:)`` and handles the ``AckResult``;
/// - arms a timer at ``deadline(rtt:)`` and calls ``onTimeout(now:rtt:)`` when it fires.
///
/// A packet is declared lost once a packet sent at least ``packetThreshold`` numbers later is acknowledged, or once
/// a later packet is acknowledged and the packet was sent at least ``lossDelay(rtt:)`` ago. Like RFC 9002 the
/// packet threshold counts packet numbers, so skipped numbers count too.
///
/// The thresholds start at RFC 9002's (3 packets, 9/8 of the RTT) and adapt to reordering: when an ACK arrives for
/// a packet already declared lost (a spurious loss, counted in ``AckResult/spuriousLosses``), they rise so that the
/// packet would not have been declared lost, up to ``ProtocolLimits/maxPacketThreshold`` and
/// ``ProtocolLimits/maxTimeThresholdEighths``, and they return to the defaults after
/// ``ProtocolLimits/reorderingDecayPeriods`` recovery periods without a spurious loss. When every loss of the
/// current recovery period proves spurious, ``AckResult/recoveryWasSpurious`` tells the connection to undo the
/// congestion response (`CongestionController.onSpuriousCongestionEvent()`).
///
/// Memory is bounded: at most ``ProtocolLimits/maxTrackedSentPackets`` packets are tracked (``canSend`` turns
/// `false` at the limit), at most ``ProtocolLimits/maxTrackedAckOnlyPackets`` pure ACK packets after the newest
/// ack-eliciting one, at most ``ProtocolLimits/maxTrackedSkippedRanges`` runs of skipped numbers, and at most
/// ``ProtocolLimits/maxTrackedLostPackets`` declared-lost packet numbers for spurious-loss detection.
///
/// The tracker reads no clock: time comes in as `now`.
public struct SentPacketTracker<Record: Sendable>: Sendable {
    /// A tracked packet number and what became of it. Resolved slots stay until everything older is resolved, so
    /// the slots between two outstanding packets tell whether anything between them was acknowledged.
    private struct Slot: Sendable {
        let packetNumber: UInt64
        var state: State

        var isOutstanding: Bool {
            if case .outstanding = state { return true }
            return false
        }
    }

    private enum State: Sendable {
        case outstanding(Packet)
        case acknowledged
        case lost
    }

    /// Slots in increasing packet-number order; those before `head` are resolved and waiting to be compacted away.
    private var slots: [Slot] = []
    private var head = 0
    /// Runs of packet numbers that were skipped (never sent), in increasing order.
    private var skipped: [ClosedRange<UInt64>] = []
    /// Packets that are neither ack-eliciting nor in flight, sent after the newest packet that is one of them.
    private var ackOnlyTail = 0
    /// The newest packet that is ack-eliciting or in flight.
    private var largestRetainedSent: UInt64?
    private var lastSentTime: Instant?
    /// When the first RTT sample was known to exist; only packets sent after it count for persistent congestion.
    private var firstRTTSampleTime: Instant?
    /// Recently lost packets, the adaptive thresholds and the recovery periods, for spurious-loss handling.
    private var spurious = SpuriousLossTracker()
    /// Delivered and lost totals, stamped on each in-flight packet; every ACK's ``AckResult/deliverySample``.
    public private(set) var deliveryRate = DeliveryRateEstimator()

    /// The largest packet number sent, or `nil` before the first packet.
    public private(set) var largestSent: UInt64?
    /// The largest packet number the peer acknowledged, or `nil` before the first ACK.
    public private(set) var largestAcknowledged: UInt64?
    /// The bytes of in-flight packets neither acknowledged nor declared lost.
    public private(set) var bytesInFlight = 0
    /// How many ack-eliciting packets are neither acknowledged nor declared lost.
    public private(set) var ackElicitingInFlight = 0
    /// When the newest ack-eliciting packet was sent, or `nil` before the first.
    public private(set) var lastAckElicitingSentTime: Instant?
    /// Whether the peer acknowledges the newest ack-eliciting packet at once (IMMEDIATE_ACK, honoured): its probe
    /// timeout then leaves out the acknowledgement delay.
    public private(set) var lastAckElicitingAcknowledgedAtOnce = false
    /// How many probe timeouts fired in a row without an ACK acknowledging anything new; each doubles the next
    /// probe timeout.
    public private(set) var probeTimeoutCount = 0
    /// When the probe timeout last fired, for spacing capped probes.
    public private(set) var lastProbeTimeoutAt: Instant?
    /// The earliest time at which an outstanding packet below the largest acknowledged one crosses the time
    /// threshold and is declared lost, or `nil` if there is none. While set, the probe timeout is not armed.
    public private(set) var lossDeadline: Instant?

    /// A tracker that has sent nothing.
    public init() {}

    /// The packet reordering threshold now in use: ``ProtocolLimits/packetThreshold`` (3) until a spurious loss
    /// raises it, at most ``ProtocolLimits/maxPacketThreshold``.
    public var packetThreshold: UInt64 { spurious.packetThreshold }

    /// The time threshold now in use, in eighths of max(smoothed RTT, latest RTT):
    /// ``ProtocolLimits/timeThresholdEighths`` (9) until a spurious loss raises it, at most
    /// ``ProtocolLimits/maxTimeThresholdEighths``.
    public var timeThresholdEighths: Int { spurious.timeThresholdEighths }

    /// How many packets declared lost were later acknowledged, in total.
    public var spuriousLossCount: Int { spurious.spuriousLossCount }

    /// How many recovery periods began, in total: loss events with an in-flight packet sent after the current
    /// period began, the ones a congestion controller reacts to.
    public var recoveryPeriodCount: Int { spurious.recoveryPeriodCount }

    /// How long after its send a packet below the largest acknowledged one is declared lost: the time threshold
    /// (``timeThresholdEighths``) × max(smoothed, latest RTT), at least the timer granularity. Equal to
    /// `rtt.lossDelay` (RFC 9002's 9/8) until a spurious loss raises the threshold.
    public func lossDelay(rtt: RTTEstimator) -> Duration {
        spurious.lossDelay(rtt: rtt)
    }

    /// How many slots are tracked, from the oldest packet neither acknowledged nor declared lost to the newest.
    public var trackedPacketCount: Int { slots.count - head }

    /// Whether another packet may be sent: `false` once ``trackedPacketCount`` reaches
    /// ``ProtocolLimits/maxTrackedSentPackets``. The connection stops sending (probes included) until an ACK or a
    /// loss makes room.
    public var canSend: Bool { trackedPacketCount < ProtocolLimits.maxTrackedSentPackets }

    /// Records that packet `packetNumber` of `bytes` bytes was sent at `now`, keeping `record` for when it is
    /// acknowledged or lost. A Path MTU probe (`isPathProbe`) counts in flight but its loss is no congestion signal
    /// (see ``Packet/isPathProbe``). `acknowledgedAtOnce`: the peer will acknowledge it without delay (see
    /// ``probeDeadline(rtt:)``).
    ///
    /// Packet numbers must strictly increase and stay below 2^62, send times must not go backwards, and an
    /// ack-eliciting packet is always in flight (all preconditions). Numbers between the previous packet and this
    /// one are remembered as skipped. Throws ``ProtocolError/queueFull(limit:)``, recording nothing, when
    /// ``canSend`` is `false`: the packet must not be transmitted.
    public mutating func onSent(
        _ packetNumber: UInt64, bytes: Int, ackEliciting: Bool, inFlight: Bool, record: Record,
        isPathProbe: Bool = false, acknowledgedAtOnce: Bool = false, now: Instant
    ) throws(ProtocolError) {
        precondition(packetNumber < ProtocolLimits.rejectAfterPackets, "packet number beyond the ACK space")
        precondition(largestSent.map { packetNumber > $0 } ?? true, "packet numbers must strictly increase")
        precondition(lastSentTime.map { now >= $0 } ?? true, "send times must not go backwards")
        precondition(bytes >= 0, "negative packet size")
        precondition(!ackEliciting || inFlight, "ack-eliciting packets are always in flight")
        guard canSend else {
            throw .queueFull(limit: ProtocolLimits.maxTrackedSentPackets)
        }

        let expected = largestSent.map { $0 + 1 } ?? 0
        if packetNumber > expected {
            skipped.append(expected...(packetNumber - 1))
            if skipped.count > ProtocolLimits.maxTrackedSkippedRanges {
                skipped.removeFirst()
            }
        }
        largestSent = packetNumber
        lastSentTime = now

        let delivery =
            inFlight
            ? deliveryRate.onSending(bytes: bytes, bytesInFlight: bytesInFlight, now: now) : .initial(at: now)
        let packet = Packet(
            packetNumber: packetNumber, bytes: bytes, sentTime: now, ackEliciting: ackEliciting,
            inFlight: inFlight, record: record, delivery: delivery, isPathProbe: isPathProbe)
        slots.append(Slot(packetNumber: packetNumber, state: .outstanding(packet)))
        if inFlight {
            bytesInFlight += bytes
        }
        if ackEliciting {
            ackElicitingInFlight += 1
            lastAckElicitingSentTime = now
            lastAckElicitingAcknowledgedAtOnce = acknowledgedAtOnce
        }
        if ackEliciting || inFlight {
            largestRetainedSent = packetNumber
            ackOnlyTail = 0
        } else {
            ackOnlyTail += 1
            if ackOnlyTail > ProtocolLimits.maxTrackedAckOnlyPackets {
                forgetOldestAckOnlyPackets()
            }
        }
    }

    /// Processes an ACK frame received at `now`: removes the newly acknowledged packets, takes an RTT sample into
    /// `rtt` when the largest acknowledged packet is newly acknowledged and something ack-eliciting was, declares
    /// packets lost, and resets the probe timeout backoff.
    ///
    /// Throws ``ProtocolError/protocolViolation(_:)`` with ``ProtocolViolation/acknowledgedUnsentPacket(_:)``,
    /// changing nothing, if the frame acknowledges a number above ``largestSent`` or a skipped number (the
    /// connection closes with PROTOCOL_VIOLATION). An ACK that acknowledges nothing new (a duplicate) changes nothing
    /// and returns an empty result.
    public mutating func onAck(
        _ frame: AckFrame, now: Instant, rtt: inout RTTEstimator
    ) throws(ProtocolError) -> AckResult {
        var result = AckResult()
        try onAck(frame, now: now, rtt: &rtt, ignoringSamplesSentBefore: nil, into: &result)
        return result
    }

    /// ``onAck(_:now:rtt:)`` writing into `result`, whose contents are replaced but whose array storage is reused:
    /// a connection keeps one result for all its ACKs instead of allocating a new one for each. On a throw `result`
    /// is left unchanged. An acknowledgement of a packet sent before `cutoff` gives no RTT sample (the connection was
    /// stalled until then, so when it arrived is unknown).
    mutating func onAck(
        _ frame: AckFrame, now: Instant, rtt: inout RTTEstimator, ignoringSamplesSentBefore cutoff: Instant?,
        into result: inout AckResult
    ) throws(ProtocolError) {
        try validate(frame.ranges)
        noteRTTSample(rtt, now: now)

        result.acknowledged.removeAll(keepingCapacity: true)
        result.acknowledgedBytesInFlight = 0
        result.latestAcknowledgedSentTime = nil
        result.tookRTTSample = false
        result.loss = LossEvent()
        result.spuriousLosses = 0
        result.recoveryWasSpurious = false
        result.deliverySample = nil
        let previousLargestAcknowledged = largestAcknowledged
        let largestGrew = largestAcknowledged.map { frame.largestAcknowledged > $0 } ?? true
        if largestGrew {
            largestAcknowledged = frame.largestAcknowledged
        }
        // Ranges from the lowest to the highest, so the acknowledged packets come out in increasing order.
        for rangeIndex in stride(from: frame.ranges.count - 1, through: 0, by: -1) {
            let range = frame.ranges[rangeIndex]
            var index = firstSlotIndex(atLeast: range.lowerBound)
            while index < slots.count, slots[index].packetNumber <= range.upperBound {
                if case .outstanding(let packet) = slots[index].state {
                    slots[index].state = .acknowledged
                    resolve(packet)
                    result.acknowledged.append(packet)
                    if packet.inFlight {
                        result.acknowledgedBytesInFlight += packet.bytes
                        result.latestAcknowledgedSentTime = packet.sentTime
                        deliveryRate.onAcknowledged(
                            bytes: packet.bytes, sentTime: packet.sentTime, snapshot: packet.delivery, now: now)
                    }
                }
                index += 1
            }
        }
        // A larger acknowledged number can also come from a forgotten pure ACK; either way loss detection runs. A
        // late ACK for packets already declared lost acknowledges nothing new either, but is spurious-loss evidence:
        // loss detection runs again with the raised thresholds (the loss deadline moves), and the probe timeout
        // backoff stays (RFC 9002 resets it only for newly acknowledged packets).
        guard !result.acknowledged.isEmpty || largestGrew else {
            let outcome = spurious.onAck(
                frame.ranges, previousLargestAcknowledged: previousLargestAcknowledged, now: now, rtt: rtt)
            guard outcome.spuriousLosses > 0 else { return }
            result.spuriousLosses = outcome.spuriousLosses
            result.recoveryWasSpurious = outcome.recoveryWasSpurious
            result.loss = detectLostPackets(now: now, rtt: rtt)
            compact()
            return
        }

        if let newest = result.acknowledged.last, newest.packetNumber == frame.largestAcknowledged,
            result.acknowledged.contains(where: \.ackEliciting), cutoff.map({ newest.sentTime >= $0 }) ?? true
        {
            let ackDelay = Duration.microseconds(Int64(clamping: frame.ackDelay))
            rtt.update(sample: now - newest.sentTime, ackDelay: ackDelay)
            result.tookRTTSample = true
            noteRTTSample(rtt, now: now)
        }
        // Before loss detection, so that thresholds raised by this ACK's evidence already apply to it.
        let outcome = spurious.onAck(
            frame.ranges, previousLargestAcknowledged: previousLargestAcknowledged, now: now, rtt: rtt)
        result.spuriousLosses = outcome.spuriousLosses
        result.recoveryWasSpurious = outcome.recoveryWasSpurious
        result.loss = detectLostPackets(now: now, rtt: rtt)
        // After loss detection, so the sample counts this ACK's losses too.
        result.deliverySample = deliveryRate.takeSample(minRTT: rtt.hasSample ? rtt.minimum : nil)
        probeTimeoutCount = 0
        compact()
    }

    /// The sender had nothing to send while its congestion window had room: delivery-rate samples are marked
    /// application-limited until what is in flight now is delivered (they measure the application, not the path).
    public mutating func onApplicationLimited() {
        deliveryRate.onApplicationLimited(bytesInFlight: bytesInFlight)
    }

    /// When the probe timeout fires (RFC 9002 §6.2.1): the send time of the newest ack-eliciting packet plus
    /// `rtt.probeTimeout` × 2^``probeTimeoutCount`` (the exponent capped at
    /// ``ProtocolLimits/maxProbeTimeoutBackoffExponent``), or `nil` if no ack-eliciting packet is outstanding.
    ///
    /// Deliberate deviation from RFC 9002's unbounded doubling: once the backed-off interval would exceed
    /// ``ProtocolLimits/maxProbeTimeoutInterval`` (or one un-backed-off probe timeout, if that is longer), probes
    /// come at that interval after the later of the last send and the last probe timeout. A burst of losses then
    /// cannot push the next probe past the idle timeout, and a path where probes cannot be sent still does not
    /// fire continuously.
    ///
    /// When the newest ack-eliciting packet will be acknowledged at once (it asked for IMMEDIATE_ACK and the peer
    /// honours it), the base interval is ``RTTEstimator/immediateProbeTimeout``: the peer adds no acknowledgement
    /// delay to wait for.
    public func probeDeadline(rtt: RTTEstimator) -> Instant? {
        guard ackElicitingInFlight > 0, let lastAckElicitingSentTime else { return nil }
        let exponent = Swift.min(probeTimeoutCount, ProtocolLimits.maxProbeTimeoutBackoffExponent)
        let base = lastAckElicitingAcknowledgedAtOnce ? rtt.immediateProbeTimeout : rtt.probeTimeout
        let backedOff = base * (1 << exponent)
        let cap = Swift.max(ProtocolLimits.maxProbeTimeoutInterval, base)
        guard backedOff > cap else { return lastAckElicitingSentTime + backedOff }
        return Swift.max(lastAckElicitingSentTime, lastProbeTimeoutAt ?? lastAckElicitingSentTime) + cap
    }

    /// When to call ``onTimeout(now:rtt:)``: ``lossDeadline`` if set, else ``probeDeadline(rtt:)``, else `nil` (no
    /// timer).
    public func deadline(rtt: RTTEstimator) -> Instant? {
        lossDeadline ?? probeDeadline(rtt: rtt)
    }

    /// Handles the loss-detection timer at `now` (RFC 9002 §6.2.4 and appendix A.9).
    ///
    /// If ``lossDeadline`` is set and reached, declares the packets past the time threshold lost. Otherwise, if
    /// ``probeDeadline(rtt:)`` is reached, counts one more probe timeout (doubling the next) and asks for
    /// ``ProtocolLimits/probePacketsPerTimeout`` probe packets. Called early, it does nothing.
    public mutating func onTimeout(now: Instant, rtt: RTTEstimator) -> TimeoutResult {
        noteRTTSample(rtt, now: now)
        if let lossDeadline {
            guard now >= lossDeadline else { return .notDue }
            let loss = detectLostPackets(now: now, rtt: rtt)
            compact()
            return loss.isEmpty ? .notDue : .lost(loss)
        }
        guard let probeDeadline = probeDeadline(rtt: rtt), now >= probeDeadline else { return .notDue }
        probeTimeoutCount += 1
        lastProbeTimeoutAt = now
        return .probe(count: ProtocolLimits.probePacketsPerTimeout)
    }

    /// The oldest ack-eliciting packet neither acknowledged nor declared lost, whose frames make a good probe
    /// (RFC 9002 §6.2.4), or `nil`.
    public var oldestOutstandingAckEliciting: Packet? {
        for slot in slots[head...] {
            if case .outstanding(let packet) = slot.state, packet.ackEliciting { return packet }
        }
        return nil
    }

    // MARK: - Internals

    /// Throws if any range acknowledges a number above ``largestSent`` or a skipped number.
    private func validate(_ ranges: AckRanges) throws(ProtocolError) {
        guard let largestSent, ranges.largest <= largestSent else {
            throw .protocolViolation(.acknowledgedUnsentPacket(ranges.largest))
        }
        // Walk the acknowledged ranges (lowest first) and the skipped runs (both increasing) side by side.
        var rangeIndex = ranges.count - 1
        var skippedIndex = 0
        while rangeIndex >= 0, skippedIndex < skipped.count {
            let acknowledged = ranges[rangeIndex]
            let run = skipped[skippedIndex]
            if acknowledged.upperBound < run.lowerBound {
                rangeIndex -= 1
            } else if run.upperBound < acknowledged.lowerBound {
                skippedIndex += 1
            } else {
                throw .protocolViolation(
                    .acknowledgedUnsentPacket(Swift.max(acknowledged.lowerBound, run.lowerBound)))
            }
        }
    }

    /// Remembers when an RTT sample first existed (it may come from the handshake, before this tracker saw one).
    private mutating func noteRTTSample(_ rtt: RTTEstimator, now: Instant) {
        if firstRTTSampleTime == nil, rtt.hasSample {
            firstRTTSampleTime = now
        }
    }

    /// Removes an acknowledged or lost packet from the in-flight accounting.
    private mutating func resolve(_ packet: Packet) {
        if packet.inFlight {
            bytesInFlight -= packet.bytes
        }
        if packet.ackEliciting {
            ackElicitingInFlight -= 1
        }
    }

    /// RFC 9002 appendix A.10 (DetectAndRemoveLostPackets) and §7.6 (persistent congestion), in one pass over the
    /// packets up to the largest acknowledged one.
    private mutating func detectLostPackets(now: Instant, rtt: RTTEstimator) -> LossEvent {
        lossDeadline = nil
        var loss = LossEvent()
        guard let largestAcknowledged else { return loss }
        let lossDelay = spurious.lossDelay(rtt: rtt)
        let packetThreshold = spurious.packetThreshold
        var firstLostInFlight: UInt64?
        var lostInFlight = 0
        let lostSendTime = now - lossDelay
        let congestionPeriod = rtt.probeTimeout * ProtocolLimits.persistentCongestionThreshold
        // The send time of the first ack-eliciting loss since the last acknowledged packet in this pass.
        var congestionStart: Instant?

        var index = head
        while index < slots.count, slots[index].packetNumber <= largestAcknowledged {
            defer { index += 1 }
            guard case .outstanding(let packet) = slots[index].state else {
                if case .acknowledged = slots[index].state {
                    congestionStart = nil
                }
                continue
            }
            guard
                packet.sentTime <= lostSendTime
                    || largestAcknowledged >= packet.packetNumber + packetThreshold
            else {
                let packetDeadline = packet.sentTime + lossDelay
                lossDeadline = Swift.min(lossDeadline ?? packetDeadline, packetDeadline)
                congestionStart = nil
                continue
            }
            slots[index].state = .lost
            resolve(packet)
            loss.packets.append(packet)
            if packet.isPathProbe { continue }
            if packet.inFlight {
                loss.bytesInFlight += packet.bytes
                deliveryRate.onLost(bytes: packet.bytes)
                loss.latestSentTime = Swift.max(loss.latestSentTime ?? packet.sentTime, packet.sentTime)
                spurious.remember(packet.packetNumber, sentTime: packet.sentTime)
                if firstLostInFlight == nil { firstLostInFlight = packet.packetNumber }
                lostInFlight += 1
            }
            guard packet.ackEliciting, let firstRTTSampleTime, packet.sentTime > firstRTTSampleTime else { continue }
            if let congestionStart {
                if packet.sentTime - congestionStart > congestionPeriod {
                    loss.persistentCongestion = true
                }
            } else {
                congestionStart = packet.sentTime
            }
        }
        if let firstLostInFlight, let latestSentTime = loss.latestSentTime {
            spurious.onLosses(
                firstLost: firstLostInFlight, count: lostInFlight, latestSentTime: latestSentTime,
                persistentCongestion: loss.persistentCongestion, now: now)
        }
        return loss
    }

    /// The index of the first tracked slot whose packet number is at least `packetNumber` (`slots.count` if none).
    private func firstSlotIndex(atLeast packetNumber: UInt64) -> Int {
        lowerBound(in: head..<slots.count) { slots[$0].packetNumber < packetNumber }
    }

    /// Drops resolved slots at the front; shrinks the storage once they are the larger part of it.
    private mutating func compact() {
        while head < slots.count, !slots[head].isOutstanding {
            head += 1
        }
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
    }

    /// Forgets the oldest half of the pure ACK packets sent after the newest ack-eliciting or in-flight packet.
    private mutating func forgetOldestAckOnlyPackets() {
        let start = largestRetainedSent.map { firstSlotIndex(atLeast: $0 + 1) } ?? head
        // Acknowledged ones may already have been compacted away: count what is really there.
        ackOnlyTail = slots.count - start
        guard ackOnlyTail > ProtocolLimits.maxTrackedAckOnlyPackets else { return }
        let count = ackOnlyTail - ProtocolLimits.maxTrackedAckOnlyPackets / 2
        // These packets are neither in flight nor ack-eliciting, and newer than every packet that is: dropping them
        // changes no accounting and separates no two packets that matter for persistent congestion.
        slots.removeSubrange(start..<(start + count))
        ackOnlyTail -= count
        compact()
    }
}
