/// A forward-only cursor that reads wire data from borrowed memory without copying it.
///
/// A reader never reads outside its buffer: every read first checks the number of remaining bytes and
/// throws ``WireError/truncated(needed:available:)`` when it is too small, leaving the position unchanged.
/// Fixed-size integers are little-endian; variable-length integers follow RFC 9000 §16.
///
/// The reader borrows `bytes`: it, and every `UnsafeRawBufferPointer` it returns, is valid only while the
/// memory it was created from is (typically inside a `withUnsafeBytes` closure).
public struct ByteReader {
    /// The whole buffer being read.
    public let bytes: UnsafeRawBufferPointer

    /// Backing storage of ``offset``.
    @usableFromInline
    var storedOffset: Int

    /// The position of the next byte to read, as an offset from the start of ``bytes``.
    @inlinable
    public var offset: Int { storedOffset }

    /// Creates a reader positioned at the first byte of `bytes`.
    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        self.storedOffset = 0
    }

    /// The number of bytes not read yet.
    @inlinable
    public var remaining: Int { bytes.count &- offset }

    /// Whether every byte has been read.
    @inlinable
    public var isAtEnd: Bool { offset >= bytes.count }

    /// Throws ``WireError/truncated(needed:available:)`` unless at least `count` bytes remain.
    @inlinable
    public func require(_ count: Int) throws(WireError) {
        guard count <= remaining else {
            throw .truncated(needed: count, available: remaining)
        }
    }

    /// Returns the next byte without consuming it, or `nil` at the end.
    @inlinable
    public func peekUInt8() -> UInt8? {
        isAtEnd ? nil : bytes[offset]
    }

    /// Reads one byte.
    @inlinable
    public mutating func readUInt8() throws(WireError) -> UInt8 {
        try require(1)
        let value = bytes[offset]
        storedOffset &+= 1
        return value
    }

    /// Reads a little-endian 16-bit unsigned integer.
    @inlinable
    public mutating func readUInt16LE() throws(WireError) -> UInt16 {
        try require(2)
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
        storedOffset &+= 2
        return UInt16(littleEndian: value)
    }

    /// Reads a little-endian 32-bit unsigned integer.
    @inlinable
    public mutating func readUInt32LE() throws(WireError) -> UInt32 {
        try require(4)
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        storedOffset &+= 4
        return UInt32(littleEndian: value)
    }

    /// Reads a little-endian 64-bit unsigned integer.
    @inlinable
    public mutating func readUInt64LE() throws(WireError) -> UInt64 {
        try require(8)
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        storedOffset &+= 8
        return UInt64(littleEndian: value)
    }

    /// Reads a QUIC variable-length integer (see ``VarInt``). Non-minimal encodings are accepted.
    @inlinable
    public mutating func readVarInt() throws(WireError) -> UInt64 {
        guard let first = peekUInt8() else {
            throw .truncated(needed: 1, available: 0)
        }
        switch first >> 6 {
        case 0:
            storedOffset &+= 1
            return UInt64(first)
        case 1:
            try require(2)
            let raw = UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            storedOffset &+= 2
            return UInt64(raw & 0x3FFF)
        case 2:
            try require(4)
            let raw = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            storedOffset &+= 4
            return UInt64(raw & 0x3FFF_FFFF)
        default:
            try require(8)
            let raw = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            storedOffset &+= 8
            return raw & 0x3FFF_FFFF_FFFF_FFFF
        }
    }

    /// Consumes `count` bytes and returns them as a view into ``bytes`` (no copy).
    ///
    /// The check against the remaining byte count happens before anything else, so a hostile `count`
    /// (up to 2^64 - 1) costs nothing. The returned view is valid only as long as ``bytes`` is.
    @inlinable
    public mutating func readBytes(count: UInt64) throws(WireError) -> UnsafeRawBufferPointer {
        guard count <= UInt64(remaining) else {
            throw .truncated(needed: count > UInt64(Int.max) ? Int.max : Int(count), available: remaining)
        }
        let start = storedOffset
        storedOffset &+= Int(count)
        return UnsafeRawBufferPointer(rebasing: bytes[start..<storedOffset])
    }

    /// Consumes `count` bytes and returns them as a view into ``bytes`` (no copy).
    @inlinable
    public mutating func readBytes(count: Int) throws(WireError) -> UnsafeRawBufferPointer {
        guard count >= 0 else {
            throw .truncated(needed: count, available: remaining)
        }
        return try readBytes(count: UInt64(count))
    }

    /// Consumes `count` bytes and returns a copy of them.
    @inlinable
    public mutating func readArray(count: Int) throws(WireError) -> [UInt8] {
        Array(try readBytes(count: count))
    }

    /// Consumes `count` bytes without looking at them.
    @inlinable
    public mutating func skip(_ count: Int) throws(WireError) {
        _ = try readBytes(count: count)
    }

    /// Consumes the rest of the buffer and returns it as a view (no copy).
    @inlinable
    public mutating func readRemaining() -> UnsafeRawBufferPointer {
        let start = Swift.min(offset, bytes.count)
        storedOffset = bytes.count
        return UnsafeRawBufferPointer(rebasing: bytes[start...])
    }

    /// Throws ``WireError/trailingBytes(count:)`` unless every byte has been read.
    @inlinable
    public func expectEnd() throws(WireError) {
        guard isAtEnd else {
            throw .trailingBytes(count: remaining)
        }
    }
}
