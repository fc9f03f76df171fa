/// An ACK frame (type 0x02): acknowledges received packet numbers, with the QUIC encoding of
/// RFC 9000 §19.3.
///
/// Body: `largest acknowledged (varint) | ack delay in µs (varint) | range count (varint) |
/// first range (varint) | range count × (gap (varint), range length (varint))`. The range count excludes
/// the first range. The first range covers `largest - firstRange ... largest`; each further range lies
/// `gap + 2` below the previous range's smallest number and covers `length + 1` numbers.
public struct AckFrame: Hashable, Sendable, WireEncodable {
    /// The time between receiving the largest acknowledged packet and sending this ACK, in microseconds.
    public var ackDelay: UInt64
    /// The acknowledged ranges, highest first.
    public var ranges: AckRanges

    /// Creates an ACK frame.
    @inlinable
    public init(ackDelay: UInt64, ranges: AckRanges) {
        self.ackDelay = ackDelay
        self.ranges = ranges
    }

    /// The largest acknowledged packet number.
    @inlinable
    public var largestAcknowledged: UInt64 { ranges.largest }

    /// Decodes the body (after the type) of an ACK frame.
    ///
    /// The range count is checked against ``WireLimits/maxAckRanges`` before any range is read or any
    /// storage reserved; every range is checked against underflow below 0.
    init(decodingBody reader: inout ByteReader) throws(WireError) {
        let largest = try reader.readVarInt()
        ackDelay = try reader.readVarInt()
        let additionalCount = try reader.readVarInt()
        guard additionalCount < UInt64(WireLimits.maxAckRanges) else {
            throw .tooManyAckRanges(count: additionalCount + 1, limit: WireLimits.maxAckRanges)
        }
        let firstLength = try reader.readVarInt()
        guard firstLength <= largest else {
            throw .invalidAckRange(index: 0)
        }
        var smallest = largest - firstLength
        var additional: [ClosedRange<UInt64>] = []
        if additionalCount > 0 {
            additional.reserveCapacity(Int(additionalCount))
            for index in 1...Int(additionalCount) {
                let gap = try reader.readVarInt()
                let length = try reader.readVarInt()
                guard smallest >= 2, gap <= smallest - 2 else {
                    throw .invalidAckRange(index: index)
                }
                let upper = smallest - gap - 2
                guard length <= upper else {
                    throw .invalidAckRange(index: index)
                }
                smallest = upper - length
                additional.append(smallest...upper)
            }
        }
        ranges = AckRanges(validatedFirst: (largest - firstLength)...largest, additional: additional)
    }

    /// The encoded length of the frame, including its type byte.
    public var encodedLength: Int {
        var length = 1 + VarInt.encodedLength(of: ranges.largest) + VarInt.encodedLength(of: ackDelay)
        length += VarInt.encodedLength(of: UInt64(ranges.additional.count))
        length += VarInt.encodedLength(of: ranges.first.upperBound - ranges.first.lowerBound)
        var previousLower = ranges.first.lowerBound
        for range in ranges.additional {
            length += VarInt.encodedLength(of: previousLower - range.upperBound - 2)
            length += VarInt.encodedLength(of: range.upperBound - range.lowerBound)
            previousLower = range.lowerBound
        }
        return length
    }

    /// Writes the frame, including its type byte.
    ///
    /// Throws ``WireError/varIntOutOfRange(_:)`` if the ACK delay exceeds 2^62 - 1.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try writer.writeVarInt(FrameType.ack.rawValue)
        try writer.writeVarInt(ranges.largest)
        try writer.writeVarInt(ackDelay)
        try writer.writeVarInt(UInt64(ranges.additional.count))
        try writer.writeVarInt(ranges.first.upperBound - ranges.first.lowerBound)
        var previousLower = ranges.first.lowerBound
        for range in ranges.additional {
            try writer.writeVarInt(previousLower - range.upperBound - 2)
            try writer.writeVarInt(range.upperBound - range.lowerBound)
            previousLower = range.lowerBound
        }
    }
}
