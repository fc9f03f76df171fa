import HuddleProtocol
import HuddleWire
import Testing

@Suite("Spurious losses: detection, adaptive thresholds, decay and undo (RFC 9002 §6.1.1-§6.1.2, RFC 8985)")
struct SpuriousLossTests {
    typealias T = RecoveryTest

    /// Sends 0...4 at 0...4 ms and acknowledges 4 at 104 ms (RTT 100 ms): 0 and 1 are lost by the packet threshold
    /// (4 >= 1 + 3), one recovery period.
    static func twoLost() throws -> (T.Tracker, RTTEstimator) {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        for number: UInt64 in 0...4 { T.send(&tracker, number, at: T.at(Int64(number))) }
        let result = try tracker.onAck(T.ack(4...4), now: T.at(104), rtt: &rtt)
        #expect(T.numbers(result.lost) == [0, 1])
        #expect(result.spuriousLosses == 0)
        #expect(tracker.recoveryPeriodCount == 1)
        return (tracker, rtt)
    }

    @Test("An ACK covering a packet already declared lost counts one spurious loss, once")
    func detection() throws {
        var (tracker, rtt) = try Self.twoLost()
        let first = try tracker.onAck(T.ack(4...4, 0...0), now: T.at(105), rtt: &rtt)
        #expect(first.spuriousLosses == 1)
        // Nothing new was acknowledged: a spurious loss is no acknowledgement and no RTT sample.
        #expect(first.acknowledged.isEmpty)
        #expect(!first.tookRTTSample)
        #expect(tracker.spuriousLossCount == 1)
        // The same range again: already counted.
        let again = try tracker.onAck(T.ack(4...4, 0...0), now: T.at(106), rtt: &rtt)
        #expect(again.spuriousLosses == 0)
        #expect(tracker.spuriousLossCount == 1)
        // Packets acknowledged before they were declared lost are no spurious losses.
        let normal = try tracker.onAck(T.ack(2...4, 0...0), now: T.at(107), rtt: &rtt)
        #expect(T.numbers(normal.acknowledged) == [2, 3])
        #expect(normal.spuriousLosses == 0)
    }

    @Test("A spurious loss raises the packet threshold to the reordering distance + 1")
    func packetThresholdGrowth() throws {
        var (tracker, rtt) = try Self.twoLost()
        #expect(tracker.packetThreshold == 3)
        // 0 arrives after 4 was acknowledged: distance 4, so the threshold becomes 5.
        _ = try tracker.onAck(T.ack(4...4, 0...0), now: T.at(105), rtt: &rtt)
        #expect(tracker.packetThreshold == 5)
        // A smaller distance never lowers it: 1 is 3 behind.
        _ = try tracker.onAck(T.ack(4...4, 0...1), now: T.at(106), rtt: &rtt)
        #expect(tracker.packetThreshold == 5)
        // In force from now on: 8 >= 3 + 5 loses 2 and 3, but 5 stays (8 < 5 + 5; with 3 it would be lost).
        for number: UInt64 in 5...8 { T.send(&tracker, number, at: T.at(200 + Int64(number))) }
        let result = try tracker.onAck(T.ack(8...8), now: T.at(308), rtt: &rtt)
        #expect(T.numbers(result.lost) == [2, 3])
    }

    @Test("The packet threshold stops at ProtocolLimits.maxPacketThreshold")
    func packetThresholdCap() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        for number: UInt64 in 0...600 { T.send(&tracker, number, at: T.at(0)) }
        let result = try tracker.onAck(T.ack(300...600), now: T.at(100), rtt: &rtt)
        #expect(result.lost.count == 300)
        _ = try tracker.onAck(T.ack(300...600, 0...0), now: T.at(101), rtt: &rtt)
        #expect(ProtocolLimits.maxPacketThreshold == 256)
        #expect(tracker.packetThreshold == ProtocolLimits.maxPacketThreshold)
    }

    @Test("A spurious loss raises the time threshold past how late its ACK came, in eighths of an RTT, up to the cap")
    func timeThresholdGrowthAndCap() throws {
        var (tracker, rtt) = try Self.twoLost()
        #expect(tracker.timeThresholdEighths == 9)
        #expect(tracker.lossDelay(rtt: rtt) == rtt.lossDelay)
        // 0 was sent at 0 and acknowledged at 250 ms with an RTT of 100 ms: 20 eighths would be exactly enough, so
        // 21 (262.5 ms).
        _ = try tracker.onAck(T.ack(4...4, 0...0), now: T.at(250), rtt: &rtt)
        #expect(tracker.timeThresholdEighths == 21)
        #expect(tracker.lossDelay(rtt: rtt) == .microseconds(262_500))
        // 1, acknowledged 10 s after it was sent: capped at 4 RTTs.
        _ = try tracker.onAck(T.ack(4...4, 0...1), now: T.at(10_001), rtt: &rtt)
        #expect(ProtocolLimits.maxTimeThresholdEighths == 32)
        #expect(tracker.timeThresholdEighths == 32)
        #expect(tracker.lossDelay(rtt: rtt) == .milliseconds(400))
    }

    @Test("The adapted time threshold delays time-threshold losses accordingly")
    func adaptedTimeThresholdApplies() throws {
        var (tracker, rtt) = try Self.twoLost()
        _ = try tracker.onAck(T.ack(4...4, 0...0), now: T.at(250), rtt: &rtt)
        // 2 and 3 (sent at 2 and 3 ms) are now lost 262.5 ms after sending, not 112.5 ms.
        #expect(tracker.lossDeadline == T.at(264) + .microseconds(500))
        #expect(T.isNotDue(tracker.onTimeout(now: T.at(264), rtt: rtt)))
        let loss = try #require(T.loss(tracker.onTimeout(now: T.at(264) + .microseconds(500), rtt: rtt)))
        #expect(T.numbers(loss.packets) == [2])
    }

    @Test("Thresholds return to RFC 9002's after 16 recovery periods in a row without a spurious loss")
    func decay() throws {
        var (tracker, rtt) = try Self.twoLost()
        _ = try tracker.onAck(T.ack(4...4, 0...0), now: T.at(300), rtt: &rtt)
        #expect(tracker.packetThreshold == 5)
        #expect(tracker.timeThresholdEighths == 25)
        // Each round sends 6 packets 1 s apart and acknowledges the last: its first is lost by the threshold of 5
        // (and the previous round's leftovers by time), a new recovery period with no spurious loss.
        var next: UInt64 = 5
        func round(_ index: Int64) throws {
            let start = 1000 * (index + 1)
            for offset: UInt64 in 0..<6 { T.send(&tracker, next + offset, at: T.at(start + Int64(offset))) }
            let result = try tracker.onAck(T.ack((next + 5)...(next + 5)), now: T.at(start + 105), rtt: &rtt)
            #expect(result.lost.contains { $0.packetNumber == next })
            next += 6
        }
        let periodsBefore = tracker.recoveryPeriodCount
        // The period with the spurious loss ends when the first round starts the next; 16 rounds start 16 more, of
        // which 15 have ended.
        for index in 0..<16 { try round(Int64(index)) }
        #expect(tracker.recoveryPeriodCount == periodsBefore + 16)
        #expect(tracker.packetThreshold == 5)
        #expect(tracker.timeThresholdEighths == 25)
        // The 17th round ends the 16th period without a spurious loss: back to the defaults.
        try round(16)
        #expect(ProtocolLimits.reorderingDecayPeriods == 16)
        #expect(tracker.packetThreshold == ProtocolLimits.packetThreshold)
        #expect(tracker.timeThresholdEighths == ProtocolLimits.timeThresholdEighths)
    }

    @Test("A spurious loss during the decay count starts it again")
    func decayRestartsOnSpuriousLoss() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        // Both thresholds at their caps first, so later spurious losses cannot raise them further.
        for number: UInt64 in 0...300 { T.send(&tracker, number, at: T.at(0)) }
        _ = try tracker.onAck(T.ack(300...300), now: T.at(100), rtt: &rtt)
        _ = try tracker.onAck(T.ack(300...300, 0...0), now: T.at(10_000), rtt: &rtt)
        #expect(tracker.packetThreshold == 256)
        #expect(tracker.timeThresholdEighths == 32)
        // Each round: one packet lost by time (600 ms > 4 × 100 ms), a new recovery period.
        var next: UInt64 = 301
        func round(_ index: Int64, late: Bool = false) throws {
            let start = 20_000 + 1000 * index
            T.send(&tracker, next, at: T.at(start))
            T.send(&tracker, next + 1, at: T.at(start + 500))
            let result = try tracker.onAck(T.ack((next + 1)...(next + 1)), now: T.at(start + 600), rtt: &rtt)
            #expect(T.numbers(result.lost).last == next)
            if late {
                let spurious = try tracker.onAck(
                    T.ack(next...(next + 1)), now: T.at(start + 601), rtt: &rtt)
                #expect(spurious.spuriousLosses == 1)
            }
            next += 2
        }
        // Without round 5's spurious loss the thresholds would decay in round 16.
        for index in 0..<22 { try round(Int64(index), late: index == 5) }
        #expect(tracker.packetThreshold == 256)
        #expect(tracker.timeThresholdEighths == 32)
        // Round 22 ends the 16th period in a row without one.
        try round(22)
        #expect(tracker.packetThreshold == 3)
        #expect(tracker.timeThresholdEighths == 9)
    }

    @Test("When every loss of the recovery period proves spurious, the ACK says so, once")
    func undoSignal() throws {
        var (tracker, rtt) = try Self.twoLost()
        let first = try tracker.onAck(T.ack(4...4, 0...0), now: T.at(105), rtt: &rtt)
        #expect(first.spuriousLosses == 1)
        #expect(!first.recoveryWasSpurious)
        let second = try tracker.onAck(T.ack(4...4, 0...1), now: T.at(106), rtt: &rtt)
        #expect(second.spuriousLosses == 1)
        #expect(second.recoveryWasSpurious)
        let again = try tracker.onAck(T.ack(4...4, 0...1), now: T.at(107), rtt: &rtt)
        #expect(!again.recoveryWasSpurious)
    }

    @Test("Losses in the same recovery period must all prove spurious; a new period replaces the old")
    func undoCoversTheWholePeriod() throws {
        var (tracker, rtt) = try Self.twoLost()
        // 2 is lost by time at 120 ms (sent at 2 ms, before the period began at 104 ms): same period.
        T.send(&tracker, 5, at: T.at(110))
        let timeout = try #require(T.loss(tracker.onTimeout(now: T.at(114) + .microseconds(500), rtt: rtt)))
        #expect(T.numbers(timeout.packets) == [2])
        #expect(tracker.recoveryPeriodCount == 1)
        let partial = try tracker.onAck(T.ack(4...4, 0...1), now: T.at(115), rtt: &rtt)
        #expect(partial.spuriousLosses == 2)
        #expect(!partial.recoveryWasSpurious)
        let all = try tracker.onAck(T.ack(4...4, 0...2), now: T.at(116), rtt: &rtt)
        #expect(all.recoveryWasSpurious)

        // A loss of a packet sent after the period began starts a new one; its loss must prove spurious alone.
        var (other, otherRTT) = try Self.twoLost()
        for number: UInt64 in 5...8 { T.send(&other, number, at: T.at(200 + Int64(number))) }
        let newPeriod = try other.onAck(T.ack(8...8), now: T.at(308), rtt: &otherRTT)
        #expect(T.numbers(newPeriod.lost) == [2, 3, 5])
        #expect(other.recoveryPeriodCount == 2)
        // The old period's losses no longer matter.
        let old = try other.onAck(T.ack(8...8, 0...1), now: T.at(309), rtt: &otherRTT)
        #expect(old.spuriousLosses == 2)
        #expect(!old.recoveryWasSpurious)
        let current = try other.onAck(T.ack(8...8, 5...5, 2...3), now: T.at(310), rtt: &otherRTT)
        #expect(current.recoveryWasSpurious)
    }

    @Test("No undo after persistent congestion")
    func noUndoAfterPersistentCongestion() throws {
        let (initial, result, initialRTT) = try LossDetectionTests.congestionScenario(
            secondSent: T.at(1025) + .nanoseconds(1), acknowledged: T.ack(5...5))
        #expect(result.loss.persistentCongestion)
        var tracker = initial
        var rtt = initialRTT
        let late = try tracker.onAck(T.ack(5...5, 1...2), now: T.at(1200), rtt: &rtt)
        #expect(late.spuriousLosses == 2)
        #expect(!late.recoveryWasSpurious)
    }

    @Test("At most ProtocolLimits.maxTrackedLostPackets lost packets are remembered; older ones are forgotten")
    func lostPacketLimit() throws {
        #expect(ProtocolLimits.maxTrackedLostPackets == 1024)
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        // 0...1100 sent, 1100 acknowledged: 0...1097 lost (1098 packets), of which the newest 1024 (74...1097)
        // are remembered.
        for number: UInt64 in 0...1100 { T.send(&tracker, number, at: T.at(0)) }
        let result = try tracker.onAck(T.ack(1100...1100), now: T.at(100), rtt: &rtt)
        #expect(result.lost.count == 1098)
        let forgotten = try tracker.onAck(T.ack(1100...1100, 73...73), now: T.at(101), rtt: &rtt)
        #expect(forgotten.spuriousLosses == 0)
        let remembered = try tracker.onAck(T.ack(1100...1100, 74...74), now: T.at(102), rtt: &rtt)
        #expect(remembered.spuriousLosses == 1)
        let newest = try tracker.onAck(T.ack(1100...1100, 1097...1097), now: T.at(103), rtt: &rtt)
        #expect(newest.spuriousLosses == 1)
        // The period had a forgotten loss, so it can never be proven wholly spurious.
        let rest = try tracker.onAck(T.ack(1098...1100, 0...1096), now: T.at(104), rtt: &rtt)
        #expect(rest.spuriousLosses == 1022)
        #expect(!rest.recoveryWasSpurious)
    }

    @Test("Pure ACK packets declared lost are not remembered")
    func pureAcksAreNotRemembered() throws {
        var tracker = T.Tracker()
        var rtt = RTTEstimator()
        T.send(&tracker, 0, at: T.at(0), bytes: 40, ackOnly: true)
        for number: UInt64 in 1...3 { T.send(&tracker, number, at: T.at(Int64(number))) }
        let result = try tracker.onAck(T.ack(3...3), now: T.at(103), rtt: &rtt)
        #expect(T.numbers(result.lost) == [0])
        let late = try tracker.onAck(T.ack(3...3, 0...0), now: T.at(104), rtt: &rtt)
        #expect(late.spuriousLosses == 0)
        #expect(tracker.recoveryPeriodCount == 0)
    }
}
