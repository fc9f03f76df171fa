/// A forward-only writer that encodes wire data into caller-provided memory.
///
/// Every write first checks the room left and throws ``WireError/bufferTooSmall(needed:available:)`` when
/// it is too small, leaving the position and the memory untouched. Fixed-size integers are written
/// little-endian; variable-length integers follow RFC 9000 §16 with the shortest encoding.
///
/// The writer borrows `buffer`: it is valid only while that memory is (typically inside a
/// `withUnsafeMutableBytes` closure). The packetizer can size a datagram exactly by writing into a
/// buffer of the datagram size and reading ``bytesWritten``.
public struct ByteWriter {
    /// The whole buffer being written.
    public let buffer: UnsafeMutableRawBufferPointer

    /// Backing storage of ``bytesWritten``.
    @usableFromInline
    var storedCount: Int

    /// The number of bytes written so far (the offset of the next byte to write).
    @inlinable
    public var bytesWritten: Int { storedCount }

    /// Creates a writer positioned at the first byte of `buffer`.
    @inlinable
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = buffer
        self.storedCount = 0
    }

    /// The number of bytes that can still be written.
    @inlinable
    public var remaining: Int { buffer.count &- bytesWritten }

    /// Throws ``WireError/bufferTooSmall(needed:available:)`` unless at least `count` bytes of room remain.
    @inlinable
    public func require(_ count: Int) throws(WireError) {
        guard count <= remaining else {
            throw .bufferTooSmall(needed: count, available: remaining)
        }
    }

    /// Writes one byte.
    @inlinable
    public mutating func writeUInt8(_ value: UInt8) throws(WireError) {
        try require(1)
        buffer[bytesWritten] = value
        storedCount &+= 1
    }

    /// Writes a little-endian 16-bit unsigned integer.
    @inlinable
    public mutating func writeUInt16LE(_ value: UInt16) throws(WireError) {
        try require(2)
        buffer.storeBytes(of: value.littleEndian, toByteOffset: bytesWritten, as: UInt16.self)
        storedCount &+= 2
    }

    /// Writes a little-endian 32-bit unsigned integer.
    @inlinable
    public mutating func writeUInt32LE(_ value: UInt32) throws(WireError) {
        try require(4)
        buffer.storeBytes(of: value.littleEndian, toByteOffset: bytesWritten, as: UInt32.self)
        storedCount &+= 4
    }

    /// Writes a little-endian 64-bit unsigned integer.
    @inlinable
    public mutating func writeUInt64LE(_ value: UInt64) throws(WireError) {
        try require(8)
        buffer.storeBytes(of: value.littleEndian, toByteOffset: bytesWritten, as: UInt64.self)
        storedCount &+= 8
    }

    /// Writes `value` as a QUIC variable-length integer in its shortest encoding.
    ///
    /// Throws ``WireError/varIntOutOfRange(_:)`` if `value` exceeds 2^62 - 1.
    @inlinable
    public mutating func writeVarInt(_ value: UInt64) throws(WireError) {
        guard value <= WireLimits.maxVarInt else {
            throw .varIntOutOfRange(value)
        }
        let length = VarInt.encodedLength(of: value)
        try require(length)
        switch length {
        case 1:
            buffer[bytesWritten] = UInt8(truncatingIfNeeded: value)
        case 2:
            let raw = UInt16(truncatingIfNeeded: value) | 0x4000
            buffer.storeBytes(of: raw.bigEndian, toByteOffset: bytesWritten, as: UInt16.self)
        case 4:
            let raw = UInt32(truncatingIfNeeded: value) | 0x8000_0000
            buffer.storeBytes(of: raw.bigEndian, toByteOffset: bytesWritten, as: UInt32.self)
        default:
            let raw = value | 0xC000_0000_0000_0000
            buffer.storeBytes(of: raw.bigEndian, toByteOffset: bytesWritten, as: UInt64.self)
        }
        storedCount &+= length
    }

    /// Copies `bytes` into the buffer.
    @inlinable
    public mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) throws(WireError) {
        try require(bytes.count)
        guard bytes.count > 0 else { return }
        UnsafeMutableRawBufferPointer(rebasing: buffer[bytesWritten..<(bytesWritten &+ bytes.count)])
            .copyMemory(from: bytes)
        storedCount &+= bytes.count
    }

    /// Copies `bytes` into the buffer.
    @inlinable
    public mutating func writeBytes(_ bytes: [UInt8]) throws(WireError) {
        let result: Result<Void, WireError> = bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) in try writeBytes(raw) }
        }
        try result.get()
    }

    /// Writes `count` zero bytes (used for padding and reserved fields).
    @inlinable
    public mutating func writeZeros(count: Int) throws(WireError) {
        guard count > 0 else { return }
        try require(count)
        UnsafeMutableRawBufferPointer(rebasing: buffer[bytesWritten..<(bytesWritten &+ count)])
            .initializeMemory(as: UInt8.self, repeating: 0)
        storedCount &+= count
    }
}
