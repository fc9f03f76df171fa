import HuddleWire
import PropertyBased
import Testing

@Suite("Variable-length integers (RFC 9000 §16)")
struct VarIntTests {
    /// The worked examples of RFC 9000 Appendix A.1.
    @Test(
        "RFC 9000 sample encodings decode to their values",
        arguments: [
            ([0xC2, 0x19, 0x7C, 0x5E, 0xFF, 0x14, 0xE8, 0x8C], 151_288_809_941_952_652),
            ([0x9D, 0x7F, 0x3E, 0x7D], 494_878_333),
            ([0x7B, 0xBD], 15_293),
            ([0x25], 37),
        ] as [([UInt8], UInt64)])
    func rfcSamples(bytes: [UInt8], value: UInt64) throws {
        let decoded = try VarInt.decode(bytes)
        #expect(decoded.value == value)
        #expect(decoded.length == bytes.count)
        var encoded: [UInt8] = []
        try VarInt.encode(value, into: &encoded)
        #expect(encoded == bytes)
    }

    @Test("a non-minimal encoding is accepted and re-encodes minimally")
    func nonMinimalAccepted() throws {
        #expect(try VarInt.decode([0x40, 0x25]) == (37, 2))
        #expect(try VarInt.decode([0x80, 0x00, 0x00, 0x25]) == (37, 4))
        #expect(try VarInt.decode([0xC0, 0, 0, 0, 0, 0, 0, 0x25]) == (37, 8))
        var encoded: [UInt8] = []
        try VarInt.encode(37, into: &encoded)
        #expect(encoded == [0x25])
    }

    @Test(
        "length class boundaries use the shortest encoding",
        arguments: [
            (0, 1), (63, 1), (64, 2), (16_383, 2), (16_384, 4), (1_073_741_823, 4), (1_073_741_824, 8),
            ((1 << 62) - 1, 8),
        ] as [(UInt64, Int)])
    func boundaries(value: UInt64, length: Int) throws {
        #expect(VarInt.encodedLength(of: value) == length)
        var encoded: [UInt8] = []
        try VarInt.encode(value, into: &encoded)
        #expect(encoded.count == length)
        #expect(VarInt.encodedLength(firstByte: encoded[0]) == length)
        #expect(try VarInt.decode(encoded) == (value, length))
    }

    @Test("the largest value encodes as eight 0xFF bytes")
    func maximum() throws {
        var encoded: [UInt8] = []
        try VarInt.encode(VarInt.max, into: &encoded)
        #expect(encoded == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    }

    @Test("values above 2^62 - 1 are rejected when encoding", arguments: [1 << 62, UInt64.max])
    func outOfRange(value: UInt64) {
        var encoded: [UInt8] = [0xAA]
        #expect(throws: WireError.varIntOutOfRange(value)) { try VarInt.encode(value, into: &encoded) }
        #expect(encoded == [0xAA])
        var buffer = [UInt8](repeating: 0, count: 8)
        buffer.withUnsafeMutableBytes { raw in
            var writer = ByteWriter(raw)
            #expect(throws: WireError.varIntOutOfRange(value)) { try writer.writeVarInt(value) }
            #expect(writer.bytesWritten == 0)
        }
    }

    @Test("every truncation of an encoding reports the missing bytes")
    func truncations() throws {
        for value in [64, 16_384, 1_073_741_824] as [UInt64] {
            var encoded: [UInt8] = []
            try VarInt.encode(value, into: &encoded)
            for cut in 0..<encoded.count {
                let expected: WireError =
                    cut == 0 ? .truncated(needed: 1, available: 0) : .truncated(needed: encoded.count, available: cut)
                #expect(wireError { () throws(WireError) in try VarInt.decode(Array(encoded[..<cut])) } == expected)
            }
        }
    }

    @Test("decode(encode(x)) == x across all length classes")
    func roundTrip() async {
        await propertyCheck(count: 500, input: WireGen.varIntValue) { value in
            var encoded: [UInt8] = []
            try VarInt.encode(value, into: &encoded)
            #expect(encoded.count == VarInt.encodedLength(of: value))
            let decoded = try VarInt.decode(encoded + [0x99])
            #expect(decoded.value == value)
            #expect(decoded.length == encoded.count)
        }
    }

    @Test("ByteWriter and the array encoder produce identical bytes")
    func writerMatchesArrayEncoder() async {
        await propertyCheck(count: 200, input: WireGen.varIntValue) { value in
            var viaArray: [UInt8] = []
            try VarInt.encode(value, into: &viaArray)
            var buffer = [UInt8](repeating: 0xEE, count: 8)
            let written = try buffer.withUnsafeMutableBytes { (raw) throws in
                var writer = ByteWriter(raw)
                try writer.writeVarInt(value)
                return writer.bytesWritten
            }
            #expect(Array(buffer[..<written]) == viaArray)
        }
    }
}
