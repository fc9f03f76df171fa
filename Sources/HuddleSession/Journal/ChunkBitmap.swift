import HuddleProtocol

/// One bit per chunk of an attachment: which chunks a node (or a peer) holds. 200 bytes at 1,600 chunks.
public struct ChunkBitmap: Hashable, Sendable {
    /// The number of chunks.
    public let count: Int
    /// The number of bits set.
    public private(set) var setCount = 0
    private var words: [UInt64]

    /// A bitmap of `count` clear bits.
    public init(count: Int) {
        self.count = count
        words = Array(repeating: 0, count: (count + 63) / 64)
    }

    /// Whether bit `index` is set.
    public func contains(_ index: Int) -> Bool {
        words[index >> 6] & (1 << UInt64(index & 63)) != 0
    }

    /// Sets bit `index`; returns whether it was clear.
    @discardableResult
    public mutating func insert(_ index: Int) -> Bool {
        let mask: UInt64 = 1 << UInt64(index & 63)
        guard words[index >> 6] & mask == 0 else { return false }
        words[index >> 6] |= mask
        setCount += 1
        return true
    }

    /// Clears bit `index`; returns whether it was set.
    @discardableResult
    public mutating func remove(_ index: Int) -> Bool {
        let mask: UInt64 = 1 << UInt64(index & 63)
        guard words[index >> 6] & mask != 0 else { return false }
        words[index >> 6] &= ~mask
        setCount -= 1
        return true
    }

    /// Whether every bit is set.
    public var isFull: Bool { setCount == count }

    /// The set bits as maximal ranges, in order.
    public var ranges: [Range<Int>] {
        var result: [Range<Int>] = []
        var start: Int?
        for index in 0..<count {
            if contains(index) {
                if start == nil { start = index }
            } else if let begin = start {
                result.append(begin..<index)
                start = nil
            }
        }
        if let begin = start { result.append(begin..<count) }
        return result
    }

    /// The set indices, in order.
    public var indices: [Int] { (0..<count).filter { contains($0) } }
}
