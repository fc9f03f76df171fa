import HuddleProtocol
import HuddleWire
import Testing

/// The instant `milliseconds` after the origin.
private func at(_ milliseconds: Int64) -> Instant {
    Instant.zero + .milliseconds(milliseconds)
}

/// The ranges of the tracker's ACK frame at `now`, highest first.
private func ackedRanges(_ tracker: ReceivedPacketTracker, now: Instant = at(0)) -> [ClosedRange<UInt64>] {
    guard let frame = tracker.makeAckFrame(now: now) else { return [] }
    return Array(frame.ranges)
}

@Suite("Received packets and ACK generation (RFC 9000 §13.2)")
struct ReceivedPacketTrackerTests {
    @Test("Nothing received: no ACK frame and no deadline")
    func empty() {
        let tracker = ReceivedPacketTracker()
        #expect(tracker.makeAckFrame(now: at(0)) == nil)
        #expect(tracker.ackDeadline == nil)
        #expect(!tracker.isAckPending)
        #expect(tracker.largestReceived == nil)
    }

    @Test("In-order packets form one range")
    func inOrder() {
        var tracker = ReceivedPacketTracker()
        for number: UInt64 in 0...2 { tracker.onReceived(number, ackEliciting: true, now: at(0)) }
        #expect(ackedRanges(tracker) == [0...2])
        #expect(tracker.makeAckFrame(now: at(0))?.largestAcknowledged == 2)
        #expect(tracker.largestReceived == 2)
    }

    @Test("Gaps give separate ranges, highest first, and encode as the same AckRanges")
    func gaps() throws {
        var tracker = ReceivedPacketTracker()
        for number: UInt64 in [0, 1, 3, 5, 6] { tracker.onReceived(number, ackEliciting: false, now: at(0)) }
        // Missing: 2 and 4.
        #expect(tracker.ranges == [5...6, 3...3, 0...1])
        let frame = try #require(tracker.makeAckFrame(now: at(0)))
        #expect(frame.ranges == (try AckRanges(descending: [5...6, 3...3, 0...1])))
    }

    @Test("Reordered packets fill gaps and merge neighbouring ranges")
    func reordering() {
        var tracker = ReceivedPacketTracker()
        for number: UInt64 in [0, 4, 2] { tracker.onReceived(number, ackEliciting: false, now: at(0)) }
        #expect(tracker.ranges == [4...4, 2...2, 0...0])
        tracker.onReceived(3, ackEliciting: false, now: at(0))  // joins 2 and 4
        #expect(tracker.ranges == [2...4, 0...0])
        tracker.onReceived(1, ackEliciting: false, now: at(0))  // joins 0 and 2...4
        #expect(tracker.ranges == [0...4])
        tracker.onReceived(7, ackEliciting: false, now: at(0))
        tracker.onReceived(6, ackEliciting: false, now: at(0))  // extends 7 downwards only
        #expect(tracker.ranges == [6...7, 0...4])
        #expect(tracker.largestReceived == 7)
    }

    @Test("32 ranges fit in one ACK; a 33rd drops the lowest range, which is then ignored")
    func thirtyTwoRanges() {
        var tracker = ReceivedPacketTracker()
        // Even numbers 0, 2, ..., 62: 32 single-number ranges.
        for index: UInt64 in 0..<32 { tracker.onReceived(index * 2, ackEliciting: false, now: at(0)) }
        #expect(tracker.ranges.count == 32)
        #expect(tracker.makeAckFrame(now: at(0))?.ranges.count == 32)
        #expect(tracker.ranges.last == 0...0)

        // 64 needs a 33rd range: 0...0, the lowest, is dropped.
        tracker.onReceived(64, ackEliciting: false, now: at(0))
        #expect(tracker.ranges.count == 32)
        #expect(tracker.ranges.first == 64...64)
        #expect(tracker.ranges.last == 2...2)
        #expect(tracker.makeAckFrame(now: at(0))?.ranges.count == 32)

        // 0 again lies in the dropped range: ignored, nothing changes.
        let before = tracker.ranges
        tracker.onReceived(0, ackEliciting: true, now: at(5))
        #expect(tracker.ranges == before)
        // 1 still joins the lowest tracked range without opening a new one.
        tracker.onReceived(1, ackEliciting: false, now: at(5))
        #expect(tracker.ranges.last == 1...2)
        #expect(tracker.ranges.count == 32)
    }

    @Test("At 32 ranges, a packet that would open a new lowest range is ignored")
    func newLowestRangeAtCapacity() {
        var tracker = ReceivedPacketTracker()
        // 10, 12, ..., 72: 32 ranges, the lowest 10...10.
        for index: UInt64 in 0..<32 { tracker.onReceived(10 + index * 2, ackEliciting: false, now: at(0)) }
        tracker.onAckSent()
        let before = tracker.ranges
        tracker.onReceived(5, ackEliciting: true, now: at(1))
        #expect(tracker.ranges == before)
        #expect(tracker.ackDeadline == nil)
        #expect(!tracker.isAckPending)
    }

    @Test("The ACK delay is the time since the largest packet arrived, in whole microseconds")
    func ackDelay() throws {
        var tracker = ReceivedPacketTracker()
        tracker.onReceived(7, ackEliciting: true, now: at(100))
        // An older packet arriving later does not move the reference time.
        tracker.onReceived(5, ackEliciting: true, now: at(102))
        // 103.5 ms - 100 ms = 3500 µs.
        let frame = try #require(tracker.makeAckFrame(now: at(103) + .microseconds(500)))
        #expect(frame.ackDelay == 3500)
        #expect(frame.largestAcknowledged == 7)
        // 1999 ns truncate to 1 µs.
        #expect(tracker.makeAckFrame(now: at(100) + .nanoseconds(1999))?.ackDelay == 1)
        // A clock reading before the arrival (cannot happen, but) gives 0, not a wrapped value.
        #expect(tracker.makeAckFrame(now: at(99))?.ackDelay == 0)
    }

    @Test("One ack-eliciting packet waits max_ack_delay (25 ms); the second is acknowledged at once")
    func everySecondPacket() {
        var tracker = ReceivedPacketTracker()
        tracker.onReceived(0, ackEliciting: true, now: at(0))
        #expect(tracker.ackDeadline == at(25))
        tracker.onReceived(1, ackEliciting: true, now: at(10))
        #expect(tracker.ackDeadline == at(10))
        tracker.onAckSent()
        #expect(tracker.ackDeadline == nil)
        #expect(!tracker.isAckPending)
        // The count restarts after an ACK: 2 waits until 20 + 25 = 45 ms, 3 triggers.
        tracker.onReceived(2, ackEliciting: true, now: at(20))
        #expect(tracker.ackDeadline == at(45))
        tracker.onReceived(3, ackEliciting: true, now: at(30))
        #expect(tracker.ackDeadline == at(30))
    }

    @Test("The 25 ms deadline is kept when later packets do not trigger an immediate ACK")
    func deadlineKeepsEarliest() {
        var tracker = ReceivedPacketTracker(maxAckDelay: .milliseconds(25))
        tracker.onReceived(0, ackEliciting: true, now: at(0))
        tracker.onReceived(1, ackEliciting: false, now: at(5))
        #expect(tracker.ackDeadline == at(25))
        #expect(tracker.isAckPending)
    }

    @Test("Pure ACK packets are tracked but never make an ACK due")
    func nonElicitingOnly() {
        var tracker = ReceivedPacketTracker()
        for number: UInt64 in 0...3 { tracker.onReceived(number, ackEliciting: false, now: at(0)) }
        #expect(tracker.ackDeadline == nil)
        #expect(tracker.isAckPending)
        #expect(ackedRanges(tracker) == [0...3])
        // Out of order and after a gap, still nothing due.
        tracker.onReceived(9, ackEliciting: false, now: at(1))
        tracker.onReceived(6, ackEliciting: false, now: at(2))
        #expect(tracker.ackDeadline == nil)
    }

    @Test("An ack-eliciting packet after a gap or out of order is acknowledged at once")
    func outOfOrderImmediate() {
        var tracker = ReceivedPacketTracker()
        tracker.onReceived(0, ackEliciting: true, now: at(0))
        tracker.onAckSent()
        // 2 arrives, 1 is missing: immediate.
        tracker.onReceived(2, ackEliciting: true, now: at(30))
        #expect(tracker.ackDeadline == at(30))
        tracker.onAckSent()
        // 1 fills the gap: immediate.
        tracker.onReceived(1, ackEliciting: true, now: at(40))
        #expect(tracker.ackDeadline == at(40))
        tracker.onAckSent()
        // 3 is the next in order: the usual delay.
        tracker.onReceived(3, ackEliciting: true, now: at(50))
        #expect(tracker.ackDeadline == at(75))
    }

    @Test("A duplicate changes nothing (R1)")
    func duplicates() throws {
        var tracker = ReceivedPacketTracker()
        tracker.onReceived(0, ackEliciting: true, now: at(0))
        tracker.onReceived(1, ackEliciting: true, now: at(1))
        tracker.onAckSent()
        tracker.onReceived(1, ackEliciting: true, now: at(7))
        tracker.onReceived(0, ackEliciting: true, now: at(8))
        #expect(tracker.ackDeadline == nil)
        #expect(!tracker.isAckPending)
        #expect(tracker.ranges == [0...1])
        // The delay still counts from the first arrival of 1 (at 1 ms): 10 - 1 = 9 ms.
        let frame = try #require(tracker.makeAckFrame(now: at(10)))
        #expect(frame.ackDelay == 9000)
    }

    @Test("Packet numbers at or above 2^62 cannot be acknowledged and are ignored")
    func beyondAckSpace() {
        var tracker = ReceivedPacketTracker()
        tracker.onReceived(1 << 62, ackEliciting: true, now: at(0))
        #expect(tracker.ranges.isEmpty)
        #expect(tracker.ackDeadline == nil)
        let largestAcknowledgeable: UInt64 = (1 << 62) - 1
        tracker.onReceived(largestAcknowledgeable, ackEliciting: true, now: at(0))
        #expect(tracker.ranges == [largestAcknowledgeable...largestAcknowledgeable])
        #expect(tracker.makeAckFrame(now: at(0))?.largestAcknowledged == largestAcknowledgeable)
    }

    @Test("Once the peer saw an ACK up to n, numbers up to n are no longer reported")
    func ackOfAck() {
        var tracker = ReceivedPacketTracker()
        for number: UInt64 in [0, 1, 3, 5, 6] { tracker.onReceived(number, ackEliciting: false, now: at(0)) }
        tracker.onAckFrameAcknowledged(largestAcknowledged: 3)
        #expect(tracker.ranges == [5...6])
        tracker.onAckFrameAcknowledged(largestAcknowledged: 5)
        #expect(tracker.ranges == [6...6])
        // An older acknowledgement does not bring anything back.
        tracker.onAckFrameAcknowledged(largestAcknowledged: 1)
        #expect(tracker.ranges == [6...6])
        tracker.onAckFrameAcknowledged(largestAcknowledged: 6)
        #expect(tracker.ranges.isEmpty)
        #expect(tracker.makeAckFrame(now: at(2)) == nil)
    }

    @Test("A packet arriving late below what the peer saw acknowledged is acknowledged, at once")
    func lateArrivalBelowAcknowledged() {
        // Changed behaviour: such a packet used to be ignored. Its sender has probably declared it lost; only this
        // ACK lets it see the loss was spurious (the replay window drops real duplicates before this tracker).
        var tracker = ReceivedPacketTracker()
        for number: UInt64 in [0, 1, 3, 5, 6] { tracker.onReceived(number, ackEliciting: false, now: at(0)) }
        tracker.onAckSent()
        tracker.onAckFrameAcknowledged(largestAcknowledged: 3)
        #expect(tracker.ranges == [5...6])
        tracker.onReceived(2, ackEliciting: true, now: at(1))
        #expect(tracker.ranges == [5...6, 2...2])
        #expect(tracker.ackDeadline == at(1))
        #expect(tracker.largestReceived == 6)
        let frame = tracker.makeAckFrame(now: at(1))
        #expect(frame?.largestAcknowledged == 6)
        #expect(frame?.ranges.count == 2)
        // Once the peer saw that acknowledged too, it is trimmed again.
        tracker.onAckSent()
        tracker.onAckFrameAcknowledged(largestAcknowledged: 6)
        #expect(tracker.ranges.isEmpty)
    }
}
