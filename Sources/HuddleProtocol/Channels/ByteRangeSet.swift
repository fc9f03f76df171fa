/// A set of byte offsets stored as sorted, disjoint, non-adjacent ranges.
///
/// A ``SendChannel`` uses it for the acknowledged and the to-be-retransmitted bytes of a fragmented message. Its size
/// is bounded by the number of fragments the sender itself cut, so the linear insertion cost is never driven by a
/// peer. Empty ranges are ignored.
struct ByteRangeSet: Sendable, Equatable {
    /// The ranges, ascending; consecutive ranges are separated by at least one offset not in the set.
    private(set) var ranges: [Range<Int>] = []

    /// Whether the set holds no offset.
    var isEmpty: Bool { ranges.isEmpty }

    /// The lowest range, if any.
    var first: Range<Int>? { ranges.first }

    /// The number of offsets in the set.
    var count: Int { ranges.reduce(0) { $0 + $1.count } }

    /// The index of the first range that ends at or after `offset` (so may touch or contain it).
    private func firstIndex(endingAtOrAfter offset: Int) -> Int {
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < offset { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Adds `range`; returns how many of its offsets were not in the set before.
    @discardableResult
    mutating func insert(_ range: Range<Int>) -> Int {
        guard !range.isEmpty else { return 0 }
        let start = firstIndex(endingAtOrAfter: range.lowerBound)
        var end = start
        var lower = range.lowerBound
        var upper = range.upperBound
        var alreadyCovered = 0
        while end < ranges.count, ranges[end].lowerBound <= range.upperBound {
            let existing = ranges[end]
            alreadyCovered += max(
                0, min(existing.upperBound, range.upperBound) - max(existing.lowerBound, range.lowerBound))
            lower = min(lower, existing.lowerBound)
            upper = max(upper, existing.upperBound)
            end += 1
        }
        ranges.replaceSubrange(start..<end, with: CollectionOfOne(lower..<upper))
        return range.count - alreadyCovered
    }

    /// Removes every offset of `range` from the set.
    mutating func remove(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        var start = firstIndex(endingAtOrAfter: range.lowerBound)
        // A range ending exactly at range.lowerBound does not overlap.
        if start < ranges.count, ranges[start].upperBound == range.lowerBound { start += 1 }
        var end = start
        var remainder: [Range<Int>] = []
        while end < ranges.count, ranges[end].lowerBound < range.upperBound {
            let existing = ranges[end]
            if existing.lowerBound < range.lowerBound { remainder.append(existing.lowerBound..<range.lowerBound) }
            if existing.upperBound > range.upperBound { remainder.append(range.upperBound..<existing.upperBound) }
            end += 1
        }
        if start < end { ranges.replaceSubrange(start..<end, with: remainder) }
    }

    /// The parts of `range` not in the set, ascending.
    func gaps(in range: Range<Int>) -> [Range<Int>] {
        guard !range.isEmpty else { return [] }
        var result: [Range<Int>] = []
        var cursor = range.lowerBound
        var index = firstIndex(endingAtOrAfter: range.lowerBound)
        while index < ranges.count, ranges[index].lowerBound < range.upperBound, cursor < range.upperBound {
            let existing = ranges[index]
            if existing.lowerBound > cursor { result.append(cursor..<existing.lowerBound) }
            cursor = max(cursor, existing.upperBound)
            index += 1
        }
        if cursor < range.upperBound { result.append(cursor..<range.upperBound) }
        return result
    }
}
