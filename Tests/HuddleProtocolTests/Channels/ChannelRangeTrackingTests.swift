import Testing

@testable import HuddleProtocol

/// The two range trackers behind the channels, against a `Set<Int>` model.
@Suite("Channel range tracking")
struct ChannelRangeTrackingTests {
    static func randomRange(_ random: inout ChannelTestRandom, within length: Int) -> Range<Int> {
        let start = Int.random(in: 0...length, using: &random)
        return start..<Int.random(in: start...min(length, start + 150), using: &random)
    }

    /// The maximal runs of consecutive members of `model` inside `range`.
    static func runs(of model: Set<Int>, in range: Range<Int>) -> [Range<Int>] {
        var result: [Range<Int>] = []
        for offset in range where model.contains(offset) {
            if let last = result.last, last.upperBound == offset {
                result[result.count - 1] = last.lowerBound..<offset + 1
            } else {
                result.append(offset..<offset + 1)
            }
        }
        return result
    }

    @Test("ByteRangeSet insert, remove and gaps match a set model", arguments: 0..<UInt64(8))
    func byteRangeSet(seed: UInt64) {
        var random = ChannelTestRandom(seed: seed)
        var set = ByteRangeSet()
        var model = Set<Int>()
        for step in 0..<400 {
            let range = Self.randomRange(&random, within: 1000)
            if random.chance(60) {
                let added = set.insert(range)
                let before = model.count
                model.formUnion(range)
                #expect(added == model.count - before, "step \(step)")
            } else {
                set.remove(range)
                model.subtract(range)
            }
            #expect(set.ranges == Self.runs(of: model, in: 0..<1000), "step \(step): canonical ranges")
            #expect(set.count == model.count)
            let probe = Self.randomRange(&random, within: 1000)
            let gaps = Set(probe).subtracting(model)
            #expect(set.gaps(in: probe) == Self.runs(of: gaps, in: probe), "step \(step): gaps in \(probe)")
        }
    }

    @Test("ReceivedBitmap insert counts and received runs match a set model", arguments: 0..<UInt64(8))
    func receivedBitmap(seed: UInt64) {
        var random = ChannelTestRandom(seed: seed &+ 50)
        let length = Int.random(in: 1...700, using: &random)
        var bitmap = ReceivedBitmap(length: length)
        var model = Set<Int>()
        for step in 0..<200 {
            let range = Self.randomRange(&random, within: length)
            let before = model.count
            model.formUnion(range)
            #expect(bitmap.insert(range) == model.count - before, "step \(step)")
            let probe = Self.randomRange(&random, within: length)
            var runs: [Range<Int>] = []
            bitmap.forEachReceivedRun(in: probe) { runs.append($0) }
            #expect(runs == Self.runs(of: model, in: probe), "step \(step): runs in \(probe)")
        }
    }
}
