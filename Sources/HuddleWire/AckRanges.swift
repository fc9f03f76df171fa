/// The acknowledged packet-number ranges of an ACK frame: 1 to ``WireLimits/maxAckRanges`` (32) closed
/// ranges in strictly descending order, with at least one unacknowledged number between neighbours.
///
/// Every `AckRanges` value satisfies those rules and holds numbers no larger than 2^62 - 1, so it can
/// always be encoded. The first (highest) range is stored inline; further ranges live in one array of at
/// most 31 elements, so a single-range ACK (the common case) needs no heap allocation at all.
///
/// Iterating yields the ranges from the highest to the lowest.
public struct AckRanges: Hashable, Sendable, Sequence, CustomStringConvertible {
    /// The highest range (the one containing the largest acknowledged packet number).
    public let first: ClosedRange<UInt64>
    /// The ranges below ``first``, highest first; empty for a single-range ACK.
    public let additional: [ClosedRange<UInt64>]

    /// Creates a single range.
    ///
    /// Throws ``WireError/varIntOutOfRange(_:)`` if the range's upper bound exceeds 2^62 - 1.
    public init(_ range: ClosedRange<UInt64>) throws(WireError) {
        guard range.upperBound <= WireLimits.maxVarInt else {
            throw .varIntOutOfRange(range.upperBound)
        }
        self.first = range
        self.additional = []
    }

    /// Creates ranges from a sequence given highest first.
    ///
    /// Throws ``WireError/invalidAckRange(index:)`` if the sequence is empty or a range does not lie
    /// strictly below its predecessor with a gap of at least one number, ``WireError/tooManyAckRanges(count:limit:)``
    /// for more than 32 ranges, and ``WireError/varIntOutOfRange(_:)`` for numbers above 2^62 - 1.
    ///
    /// Inlinable so callers in other modules get a version specialised for their sequence type: the generic one
    /// allocates its iterator on the heap, once per ACK frame built.
    @inlinable
    public init(descending ranges: some Sequence<ClosedRange<UInt64>>) throws(WireError) {
        var iterator = ranges.makeIterator()
        guard let first = iterator.next() else {
            throw .invalidAckRange(index: 0)
        }
        guard first.upperBound <= WireLimits.maxVarInt else {
            throw .varIntOutOfRange(first.upperBound)
        }
        var additional: [ClosedRange<UInt64>] = []
        var previousLower = first.lowerBound
        var count = 1
        while let range = iterator.next() {
            count += 1
            guard count <= WireLimits.maxAckRanges else {
                throw .tooManyAckRanges(count: UInt64(count), limit: WireLimits.maxAckRanges)
            }
            guard previousLower >= 2, range.upperBound <= previousLower - 2 else {
                throw .invalidAckRange(index: count - 1)
            }
            additional.append(range)
            previousLower = range.lowerBound
        }
        self.first = first
        self.additional = additional
    }

    /// Builds the ranges to acknowledge from arbitrary ranges: sorts them, merges overlapping and
    /// adjacent ones, and keeps the ``WireLimits/maxAckRanges`` highest. Returns `nil` if `ranges` is
    /// empty. Numbers above 2^62 - 1 are dropped (they cannot be acknowledged).
    public init?(merging ranges: some Sequence<ClosedRange<UInt64>>) {
        let sorted = ranges.compactMap { range -> ClosedRange<UInt64>? in
            guard range.lowerBound <= WireLimits.maxVarInt else { return nil }
            return range.lowerBound...Swift.min(range.upperBound, WireLimits.maxVarInt)
        }.sorted { $0.upperBound > $1.upperBound }
        var merged: [ClosedRange<UInt64>] = []
        for range in sorted {
            if let last = merged.last, range.upperBound &+ 1 >= last.lowerBound {
                merged[merged.count - 1] = Swift.min(range.lowerBound, last.lowerBound)...last.upperBound
            } else {
                if merged.count == WireLimits.maxAckRanges { break }
                merged.append(range)
            }
        }
        guard !merged.isEmpty else { return nil }
        self.first = merged[0]
        self.additional = Array(merged.dropFirst())
    }

    /// Internal initialiser for ranges already validated by the decoder.
    init(validatedFirst first: ClosedRange<UInt64>, additional: [ClosedRange<UInt64>]) {
        self.first = first
        self.additional = additional
    }

    /// The largest acknowledged packet number.
    public var largest: UInt64 { first.upperBound }

    /// The smallest acknowledged packet number.
    public var smallest: UInt64 { (additional.last ?? first).lowerBound }

    /// The number of ranges, 1 to 32.
    public var count: Int { 1 + additional.count }

    /// The range at `index`, 0 being the highest.
    public subscript(index: Int) -> ClosedRange<UInt64> {
        index == 0 ? first : additional[index - 1]
    }

    /// Whether `packetNumber` lies in one of the ranges.
    public func contains(_ packetNumber: UInt64) -> Bool {
        if first.contains(packetNumber) { return true }
        guard packetNumber < first.lowerBound else { return false }
        // Binary search over the descending additional ranges.
        var low = 0
        var high = additional.count
        while low < high {
            let middle = (low + high) / 2
            let range = additional[middle]
            if range.contains(packetNumber) { return true }
            if packetNumber > range.upperBound { high = middle } else { low = middle + 1 }
        }
        return false
    }

    /// Iterates the ranges from the highest to the lowest.
    public func makeIterator() -> Iterator {
        Iterator(ranges: self)
    }

    /// The ranges, highest first, like `[10...12, 3...5]`.
    public var description: String {
        "[" + map { "\($0.lowerBound)...\($0.upperBound)" }.joined(separator: ", ") + "]"
    }

    /// Iterates ``AckRanges`` from the highest range to the lowest.
    public struct Iterator: IteratorProtocol {
        let ranges: AckRanges
        var index = 0

        /// Returns the next lower range, or `nil` after the lowest.
        public mutating func next() -> ClosedRange<UInt64>? {
            guard index < ranges.count else { return nil }
            defer { index += 1 }
            return ranges[index]
        }
    }
}
