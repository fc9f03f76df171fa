import HuddleWire
import PropertyBased
import Testing

@Suite("ACK frames (RFC 9000 §19.3 encoding)")
struct AckFrameTests {
    @Test("explicit bytes: largest 100, delay 25 µs, ranges 98...100 and 89...93")
    func explicitBytes() throws {
        let bytes: [UInt8] = [0x02, 0x40, 0x64, 0x19, 0x01, 0x02, 0x03, 0x04]
        let frames = try decodeFrames(bytes)
        let expected = AckFrame(ackDelay: 25, ranges: try AckRanges(descending: [98...100, 89...93]))
        #expect(frames == [.ack(expected)])
        #expect(try Frame.ack(expected).encoded() == bytes)
        #expect(Frame.ack(expected).encodedLength == bytes.count)
        #expect(expected.largestAcknowledged == 100)
        #expect(Array(expected.ranges) == [98...100, 89...93])
    }

    @Test("a first range reaching exactly packet 0 is valid; one further is not")
    func firstRangeUnderflow() throws {
        #expect(
            try decodeFrames([0x02, 0x05, 0x00, 0x00, 0x05]) == [
                .ack(AckFrame(ackDelay: 0, ranges: try AckRanges(0...5)))
            ])
        #expect(frameDecodingError([0x02, 0x05, 0x00, 0x00, 0x06]) == .invalidAckRange(index: 0))
    }

    @Test("a gap or length reaching below packet 0 is invalid")
    func additionalRangeUnderflow() throws {
        // largest 10, first range 5 → 5...10; gap 3 → next largest 5 - 3 - 2 = 0; length 0 → 0...0.
        let valid: [UInt8] = [0x02, 0x0A, 0x00, 0x01, 0x05, 0x03, 0x00]
        #expect(
            try decodeFrames(valid) == [
                .ack(AckFrame(ackDelay: 0, ranges: try AckRanges(descending: [5...10, 0...0])))
            ])
        #expect(frameDecodingError([0x02, 0x0A, 0x00, 0x01, 0x05, 0x04, 0x00]) == .invalidAckRange(index: 1))
        #expect(frameDecodingError([0x02, 0x0A, 0x00, 0x01, 0x05, 0x03, 0x01]) == .invalidAckRange(index: 1))
        // First range ends at 1: no room for a gap at all.
        #expect(frameDecodingError([0x02, 0x0A, 0x00, 0x01, 0x09, 0x00, 0x00]) == .invalidAckRange(index: 1))
    }

    static func ackBytes(rangeCount: Int) -> [UInt8] {
        // Ranges of one packet each, two apart: 1000, 998, 996, ...
        var bytes: [UInt8] = [0x02, 0x43, 0xE8, 0x00, UInt8(rangeCount - 1), 0x00]
        for _ in 1..<rangeCount { bytes += [0x00, 0x00] }
        return bytes
    }

    @Test("32 ranges are accepted")
    func thirtyTwoRanges() throws {
        let frames = try decodeFrames(Self.ackBytes(rangeCount: 32))
        guard case .ack(let ack) = frames.first else {
            Issue.record("expected an ACK, got \(frames)")
            return
        }
        #expect(ack.ranges.count == 32)
        #expect(ack.ranges.smallest == 1000 - 62)
        #expect(Array(ack.ranges).map(\.lowerBound) == Array(stride(from: 1000, through: 938, by: -2)))
    }

    @Test("33 ranges are rejected before any range is read")
    func thirtyThreeRanges() {
        #expect(frameDecodingError(Self.ackBytes(rangeCount: 33)) == .tooManyAckRanges(count: 33, limit: 32))
        // The count is checked before the missing ranges would be reported as truncation.
        #expect(frameDecodingError([0x02, 0x43, 0xE8, 0x00, 0x20]) == .tooManyAckRanges(count: 33, limit: 32))
    }

    @Test("an ACK claiming 2^62 - 1 additional ranges is rejected without allocating")
    func hugeRangeCount() {
        let bytes: [UInt8] = [0x02, 0x05, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00]
        #expect(frameDecodingError(bytes) == .tooManyAckRanges(count: 1 << 62, limit: 32))
    }

    @Test("AckRanges rejects empty, overlapping, adjacent, unordered and oversized input")
    func rangeValidation() throws {
        #expect(throws: WireError.invalidAckRange(index: 0)) { try AckRanges(descending: []) }
        #expect(throws: WireError.invalidAckRange(index: 1)) { try AckRanges(descending: [5...10, 4...4]) }
        #expect(throws: WireError.invalidAckRange(index: 1)) { try AckRanges(descending: [5...10, 3...6]) }
        #expect(throws: WireError.invalidAckRange(index: 1)) { try AckRanges(descending: [5...10, 20...30]) }
        #expect(throws: WireError.invalidAckRange(index: 1)) { try AckRanges(descending: [1...10, 0...0]) }
        #expect(throws: WireError.varIntOutOfRange(1 << 62)) { try AckRanges(0...(1 << 62)) }
        let many: [ClosedRange<UInt64>] = (0..<33).map { (index: Int) -> ClosedRange<UInt64> in
            let number = UInt64(1000 - 2 * index)
            return number...number
        }
        #expect(throws: WireError.tooManyAckRanges(count: 33, limit: 32)) { try AckRanges(descending: many) }
        #expect(try AckRanges(descending: many.prefix(32)).count == 32)
        #expect(try AckRanges(descending: [5...10, 3...3]).count == 2)
    }

    @Test("merging sorts, coalesces adjacent ranges and keeps the 32 highest")
    func merging() {
        let merged = AckRanges(merging: [1...2, 10...12, 3...4, 7...7, 11...15])
        #expect(merged.map(Array.init) == [10...15, 7...7, 1...4])
        #expect(AckRanges(merging: []) == nil)
        let many = AckRanges(merging: (0..<40).map { UInt64(3 * $0)...UInt64(3 * $0) })
        #expect(many?.count == 32)
        #expect(many?.largest == 117)
        #expect(many?.smallest == 3 * 8)
    }

    @Test("contains agrees with the ranges")
    func containsMatchesRanges() async {
        await propertyCheck(
            count: 200,
            input: Generator<AckRanges, Shrink.None<AckRanges>>(run: { rng in WireGen.ackRanges(using: &rng) }),
            Gen.uint64(in: 0...2000)
        ) { ranges, probe in
            let candidates =
                [probe, ranges.largest, ranges.smallest, ranges.smallest &- 1, ranges.largest &+ 1]
                + ranges.flatMap { [$0.lowerBound, $0.upperBound, $0.lowerBound &- 1, $0.upperBound &+ 1] }
            for number in candidates {
                #expect(ranges.contains(number) == ranges.contains { $0.contains(number) })
            }
        }
    }
}
