/// Big-endian reads and writes for the small router protocols (PCP, NAT-PMP), whose integers are in network order
/// unlike Huddle's own. Their messages are a few dozen bytes, built and read once per request, so plain arrays do.
enum BigEndianBytes {
    static func append(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    static func uint16(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    static func uint32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        (offset..<offset + 4).reduce(0) { $0 << 8 | UInt32(bytes[$1]) }
    }
}
