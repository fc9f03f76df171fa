/// QUIC variable-length integers (RFC 9000 §16).
///
/// The two most significant bits of the first byte give the length (00 = 1, 01 = 2, 10 = 4, 11 = 8
/// bytes); the remaining bits hold the value in network byte order (big-endian), so values up to
/// 2^62 - 1 can be represented.
///
/// Encoding always uses the shortest length. Decoding accepts non-minimal encodings (for example
/// `0x40 0x25` for 37), as RFC 9000 permits; a re-encoded value may therefore be shorter than its input.
public enum VarInt {
    /// The largest encodable value, 2^62 - 1.
    public static let max: UInt64 = WireLimits.maxVarInt

    /// The number of bytes (1, 2, 4 or 8) of the shortest encoding of `value`.
    ///
    /// Values above ``max`` cannot be encoded; for them this returns 8 and encoding throws
    /// ``WireError/varIntOutOfRange(_:)``.
    @inlinable
    public static func encodedLength(of value: UInt64) -> Int {
        if value < (1 << 6) { return 1 }
        if value < (1 << 14) { return 2 }
        if value < (1 << 30) { return 4 }
        return 8
    }

    /// The number of bytes (1, 2, 4 or 8) of the encoding that starts with `firstByte`.
    @inlinable
    public static func encodedLength(firstByte: UInt8) -> Int {
        1 << Int(firstByte >> 6)
    }

    /// Appends the shortest encoding of `value` to `bytes`.
    ///
    /// Throws ``WireError/varIntOutOfRange(_:)`` if `value` exceeds ``max``; `bytes` is then unchanged.
    @inlinable
    public static func encode(_ value: UInt64, into bytes: inout [UInt8]) throws(WireError) {
        guard value <= max else {
            throw .varIntOutOfRange(value)
        }
        let length = encodedLength(of: value)
        let prefix = UInt64(truncatingIfNeeded: length.trailingZeroBitCount) << UInt64(length * 8 - 2)
        let raw = value | prefix
        for index in stride(from: length - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: raw >> UInt64(index * 8)))
        }
    }

    /// Decodes one variable-length integer from the start of `bytes`.
    ///
    /// - Returns: The value and the number of bytes it occupied.
    /// - Throws: ``WireError/truncated(needed:available:)`` if `bytes` ends inside the integer.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> (value: UInt64, length: Int) {
        var reader = ByteReader(bytes)
        let value = try reader.readVarInt()
        return (value, reader.offset)
    }

    /// Decodes one variable-length integer from the start of `bytes`.
    ///
    /// - Returns: The value and the number of bytes it occupied.
    /// - Throws: ``WireError/truncated(needed:available:)`` if `bytes` ends inside the integer.
    @inlinable
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> (value: UInt64, length: Int) {
        let result: Result<(value: UInt64, length: Int), WireError> = bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) in try decode(raw) }
        }
        return try result.get()
    }
}
