import HuddleWire

/// The receive side of acknowledgement: remembers which packet numbers arrived and decides when to send an ACK
/// frame (RFC 9000 §13.2).
///
/// Feed it every packet that authenticated and passed the replay window, with ``onReceived(_:ackEliciting:now:)``.
/// It keeps the received numbers as at most ``ProtocolLimits/maxTrackedReceivedRanges`` (32, what one ACK frame
/// can carry) descending ranges. When a packet would need a 33rd range, the lowest (oldest) range is dropped and
/// every number at or below it is ignored from then on: those packets are at least 32 gaps behind, so the sender
/// has long declared them lost and resent their frames. Packet numbers at or above 2^62 cannot be acknowledged and
/// are ignored too.
///
/// Ranges the peer has seen acknowledged are no longer reported (``onAckFrameAcknowledged(largestAcknowledged:)``),
/// but a packet that arrives late below them is still acknowledged: the peer has probably declared it lost, and
/// only this acknowledgement lets it see that the loss was spurious (reordering) and undo its congestion response.
/// Duplicates never get this far: the replay window drops them before decryption.
///
/// ``ackDeadline`` says when an ACK must go out: at once after every second ack-eliciting packet and after any
/// ack-eliciting packet that arrives out of order or opens a gap or asks for it (IMMEDIATE_ACK, PROTOCOL.md §7.8),
/// otherwise ``ProtocolLimits/maxAckDelay`` (25 ms) after the first unacknowledged ack-eliciting packet. Packets that are not ack-eliciting (pure ACKs) are recorded
/// and acknowledged along with others but never cause an ACK by themselves. A duplicate changes nothing.
///
/// The tracker reads no clock: time comes in as `now`.
public struct ReceivedPacketTracker: Sendable {
    /// The received packet numbers still acknowledged, as disjoint, non-adjacent ranges from the highest to the
    /// lowest; at most ``ProtocolLimits/maxTrackedReceivedRanges``.
    public private(set) var ranges: [ClosedRange<UInt64>] = []

    /// The largest packet number received, or `nil` before the first packet.
    public private(set) var largestReceived: UInt64?

    /// When the next ACK frame must be sent, or `nil` if no ack-eliciting packet awaits acknowledgement. A deadline
    /// equal to the receive time means "immediately".
    public private(set) var ackDeadline: Instant?

    /// Whether any packet (ack-eliciting or not) was recorded since the last ACK was sent, so an ACK frame would
    /// tell the peer something new. A connection may piggyback an ACK on outgoing data whenever this is `true`.
    public private(set) var isAckPending = false

    /// How long to wait before acknowledging a lone ack-eliciting packet.
    public let maxAckDelay: Duration

    /// Numbers below this are ignored: they fell out of the tracked ranges (more than 32 gaps behind).
    private var floor: UInt64 = 0
    /// When ``largestReceived`` arrived (the ACK delay is measured from it).
    private var largestReceivedTime: Instant?
    /// Ack-eliciting packets recorded since the last ACK was sent.
    private var ackElicitingSinceAck = 0

    /// A tracker that has received nothing, waiting at most `maxAckDelay` before acknowledging.
    public init(maxAckDelay: Duration = ProtocolLimits.maxAckDelay) {
        self.maxAckDelay = maxAckDelay
    }

    /// Records that `packetNumber` was received (and authenticated) at `now`, and updates ``ackDeadline``;
    /// `immediate` when the packet asked to be acknowledged at once (IMMEDIATE_ACK).
    ///
    /// A duplicate of a tracked number, a number below the tracked ranges once 32 ranges are in use, a number at
    /// or below a range dropped for lack of room, and a number at or above 2^62 change nothing. A number below what
    /// the peer already saw acknowledged (``onAckFrameAcknowledged(largestAcknowledged:)``) is recorded again: the
    /// tracker no longer knows whether it arrived before, and acknowledging a late arrival tells the sender its loss
    /// was spurious (the connection's replay window has already dropped real duplicates).
    public mutating func onReceived(_ packetNumber: UInt64, ackEliciting: Bool, immediate: Bool = false, now: Instant) {
        guard packetNumber <= WireLimits.maxVarInt, packetNumber >= floor else { return }
        // The first range (from the highest) whose lower bound is at or below the packet number.
        var index = 0
        while index < ranges.count, ranges[index].lowerBound > packetNumber {
            index += 1
        }
        if index < ranges.count, ranges[index].contains(packetNumber) { return }
        let joinsLower = index < ranges.count && ranges[index].upperBound + 1 == packetNumber
        let joinsUpper = index > 0 && ranges[index - 1].lowerBound == packetNumber + 1
        switch (joinsLower, joinsUpper) {
        case (true, true):
            ranges[index - 1] = ranges[index].lowerBound...ranges[index - 1].upperBound
            ranges.remove(at: index)
        case (true, false):
            ranges[index] = ranges[index].lowerBound...packetNumber
        case (false, true):
            ranges[index - 1] = packetNumber...ranges[index - 1].upperBound
        case (false, false):
            if index == ranges.count, ranges.count == ProtocolLimits.maxTrackedReceivedRanges {
                // It would be the 33rd and lowest range: it is the one dropped.
                return
            }
            ranges.insert(packetNumber...packetNumber, at: index)
            if ranges.count > ProtocolLimits.maxTrackedReceivedRanges {
                let dropped = ranges.removeLast()
                floor = dropped.upperBound + 1
            }
        }

        let previousLargest = largestReceived
        if previousLargest.map({ packetNumber > $0 }) ?? true {
            largestReceived = packetNumber
            largestReceivedTime = now
        }
        isAckPending = true
        guard ackEliciting else { return }

        ackElicitingSinceAck += 1
        var immediate = immediate || ackElicitingSinceAck >= ProtocolLimits.ackElicitingPacketsBeforeAck
        if let previousLargest {
            // Out of order (fills a gap) or ahead of a gap: tell the sender at once (RFC 9000 §13.2.1).
            immediate = immediate || packetNumber < previousLargest || packetNumber > previousLargest + 1
        }
        let deadline = immediate ? now : now + maxAckDelay
        ackDeadline = Swift.min(ackDeadline ?? deadline, deadline)
    }

    /// The ACK frame to send at `now`, or `nil` if nothing is tracked. Its delay is the time since the largest
    /// acknowledged packet arrived, in microseconds.
    ///
    /// Building a frame changes nothing; call ``onAckSent()`` once a packet carrying it was sent.
    public func makeAckFrame(now: Instant) -> AckFrame? {
        guard !ranges.isEmpty, let largestReceivedTime else { return nil }
        let delayNanoseconds = Swift.max((now - largestReceivedTime).nanoseconds, 0)
        let ackRanges: AckRanges
        do {
            ackRanges = try AckRanges(descending: ranges)
        } catch {
            // The ranges are descending, non-adjacent, at most 32 and below 2^62 by construction.
            preconditionFailure("ReceivedPacketTracker ranges broke their invariant: \(error)")
        }
        return AckFrame(ackDelay: UInt64(delayNanoseconds / 1000), ranges: ackRanges)
    }

    /// Records that an ACK frame built by ``makeAckFrame(now:)`` was sent: clears ``ackDeadline`` and
    /// ``isAckPending`` until more packets arrive.
    public mutating func onAckSent() {
        ackDeadline = nil
        isAckPending = false
        ackElicitingSinceAck = 0
    }

    /// The peer acknowledged a packet that carried one of our ACK frames, whose largest acknowledged number was
    /// `largestAcknowledged`: the peer knows about every number up to it, so they are no longer reported (RFC 9000
    /// §13.2.4). A packet at or below it that arrives later is still recorded and acknowledged (see
    /// ``onReceived(_:ackEliciting:now:)``).
    public mutating func onAckFrameAcknowledged(largestAcknowledged: UInt64) {
        guard largestAcknowledged < WireLimits.maxVarInt else { return }
        let known = largestAcknowledged + 1
        while let lowest = ranges.last, lowest.lowerBound < known {
            if lowest.upperBound < known {
                ranges.removeLast()
            } else {
                ranges[ranges.count - 1] = known...lowest.upperBound
            }
        }
    }
}
