/// One bit per byte of a message being reassembled: which bytes have arrived.
///
/// A ``ReceiveChannel`` keeps one per incomplete message (1/8 of the message's size, at most 32 KiB). Unlike a list of
/// ranges, whose insertion cost grows with the number of holes a peer chooses to leave, every operation here costs
/// time proportional to the fragment it is asked about, whatever order or size of fragments a peer sends.
struct ReceivedBitmap: Sendable {
    private var words: [UInt64]

    /// A bitmap for a message of `length` bytes, none received.
    init(length: Int) {
        words = [UInt64](repeating: 0, count: (length + 63) / 64)
    }

    /// The mask of bits `from ..< to` within word `word` (both bounds relative to the whole bitmap).
    private static func mask(word: Int, from: Int, to: Int) -> UInt64 {
        let low = max(from - word * 64, 0)
        let high = min(to - word * 64, 64)
        let upperMask: UInt64 = high == 64 ? .max : (1 << UInt64(high)) &- 1
        return upperMask & ~((1 << UInt64(low)) &- 1)
    }

    /// The first offset in `range` whose bit equals `value`, or `range.upperBound` if there is none.
    private func firstOffset(of value: Bool, in range: Range<Int>) -> Int {
        var word = range.lowerBound >> 6
        while word * 64 < range.upperBound {
            let bits = (value ? words[word] : ~words[word]) & Self.mask(word: word, from: range.lowerBound, to: .max)
            if bits != 0 { return min(range.upperBound, word * 64 + bits.trailingZeroBitCount) }
            word += 1
        }
        return range.upperBound
    }

    /// Calls `body` with each maximal run of received bytes inside `range`, ascending.
    func forEachReceivedRun<E: Error>(in range: Range<Int>, _ body: (Range<Int>) throws(E) -> Void) throws(E) {
        var cursor = range.lowerBound
        while cursor < range.upperBound {
            let start = firstOffset(of: true, in: cursor..<range.upperBound)
            guard start < range.upperBound else { return }
            let end = firstOffset(of: false, in: start..<range.upperBound)
            try body(start..<end)
            cursor = end
        }
    }

    /// Marks `range` received; returns how many of its bytes were not marked before.
    mutating func insert(_ range: Range<Int>) -> Int {
        guard !range.isEmpty else { return 0 }
        var added = 0
        for word in (range.lowerBound >> 6)...((range.upperBound - 1) >> 6) {
            let mask = Self.mask(word: word, from: range.lowerBound, to: range.upperBound)
            added += (mask & ~words[word]).nonzeroBitCount
            words[word] |= mask
        }
        return added
    }
}
