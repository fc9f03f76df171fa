import HuddleWire
import Testing

/// `varint.json`: QUIC varints (shortest encodings at every length boundary, non-minimal encodings that must decode,
/// out-of-range values and truncated input) and the fixed-size integers of PROTOCOL.md section 1, through
/// `VarInt`, `ByteWriter` and `ByteReader`.
@Suite("Vectors: varint.json")
struct VarIntVectorTests {
    static let file = "varint"
    static let encodings: CaseFilter = {
        $0.has("value") && $0.has("encoded") && !$0.has("reencoded") && VarIntVectorTests.isVarInt($0)
    }
    static let decodings: CaseFilter = { $0.has("reencoded") }
    static let errors: CaseFilter = { $0.has("error") }
    static let fixedSizeCases: CaseFilter = { !VarIntVectorTests.isVarInt($0) }

    /// The fixed-size integer cases, and how each is written.
    static let fixedSizeLayouts = ["u16_le", "u32_le", "u64_le", "port_be_in_frame_address"]

    static func isVarInt(_ vector: JSON) -> Bool {
        !fixedSizeLayouts.contains((try? vector.string("name")) ?? "")
    }

    @Test("Every case of varint.json is checked (24 cases)")
    func coverage() throws {
        try expectCoverage(
            of: Self.file, count: 24,
            groups: [
                ("encode", Self.encodings), ("decode", Self.decodings), ("error", Self.errors),
                ("fixed", Self.fixedSizeCases),
            ])
    }

    @Test("The shortest encoding, and it decodes back", arguments: VectorFile.names(file, where: encodings))
    func encode(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let value = try vector.uint64("value")
        // The value is exact even above 2^53: the case name carries it as text.
        if name.hasPrefix("encode_") { #expect(String(value) == name.dropFirst("encode_".count)) }
        var encoded: [UInt8] = []
        try VarInt.encode(value, into: &encoded)
        #expect(try hexString(encoded) == vector.string("encoded"))
        #expect(VarInt.encodedLength(of: value) == encoded.count)
        let decoded = try VarInt.decode(try vector.bytes("encoded"))
        #expect(decoded.value == value)
        #expect(decoded.length == encoded.count)
    }

    @Test(
        "A non-minimal encoding decodes; re-encoding gives the shortest",
        arguments: VectorFile.names(file, where: decodings))
    func decodeNonMinimal(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let bytes = try vector.bytes("encoded")
        let decoded = try VarInt.decode(bytes)
        #expect(try decoded.value == vector.uint64("value"))
        #expect(decoded.length == bytes.count)
        var reencoded: [UInt8] = []
        try VarInt.encode(decoded.value, into: &reencoded)
        #expect(try hexString(reencoded) == vector.string("reencoded"))
    }

    @Test(
        "Out of range and truncated input throw the named WireError", arguments: VectorFile.names(file, where: errors))
    func error(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let expected = try vector.string("error")
        var thrown: WireError?
        do {
            if vector.has("encoded") {
                _ = try VarInt.decode(try vector.bytes("encoded"))
            } else {
                var out: [UInt8] = []
                try VarInt.encode(try vector.uint64("value"), into: &out)
            }
        } catch let error as WireError {
            thrown = error
        }
        #expect(thrown?.vectorName == expected, "\(name): Swift threw \(String(describing: thrown))")
    }

    @Test("Fixed-size integers: little-endian, except a frame address's port", arguments: fixedSizeLayouts)
    func fixedSize(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let value = try vector.uint64("value")
        let expected = try vector.bytes("encoded")
        let encoded: [UInt8]
        let decoded: UInt64
        switch name {
        case "u16_le":
            encoded = try written(2) { writer throws(WireError) in try writer.writeUInt16LE(UInt16(value)) }
            decoded = UInt64(try reading(expected) { reader throws(WireError) in try reader.readUInt16LE() })
        case "u32_le":
            encoded = try written(4) { writer throws(WireError) in try writer.writeUInt32LE(UInt32(value)) }
            decoded = UInt64(try reading(expected) { reader throws(WireError) in try reader.readUInt32LE() })
        case "u64_le":
            encoded = try written(8) { writer throws(WireError) in try writer.writeUInt64LE(value) }
            decoded = try reading(expected) { reader throws(WireError) in try reader.readUInt64LE() }
        default:
            // The port of a section 3.9 address (family 4, 0.0.0.0), as WireAddress writes and reads it.
            let address = try WireAddress(family: 4, bytes: [0, 0, 0, 0], port: UInt16(value))
            encoded = Array(try written(7) { writer throws(WireError) in try address.encode(into: &writer) }.suffix(2))
            decoded = UInt64(
                try reading([4, 0, 0, 0, 0] + expected) { reader throws(WireError) in
                    try WireAddress(decoding: &reader).port
                })
        }
        #expect(hexString(encoded) == hexString(expected))
        #expect(decoded == value)
    }
}

/// The `count` bytes `body` writes.
func written(_ count: Int, _ body: (inout ByteWriter) throws(WireError) -> Void) throws(WireError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    let outcome: Result<Int, WireError> = bytes.withUnsafeMutableBytes { raw in
        Result { () throws(WireError) in
            var writer = ByteWriter(raw)
            try body(&writer)
            return writer.bytesWritten
        }
    }
    return Array(bytes.prefix(try outcome.get()))
}
