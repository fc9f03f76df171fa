import HuddleWire
import Testing

@Suite("PING, DATAGRAM, CLOSE, MAX_DATA, DATA_BLOCKED, PADDING and unknown frames")
struct OtherFrameTests {
    @Test("explicit bytes for the small frames")
    func explicitBytes() throws {
        #expect(try OwnedFrame.ping.encoded() == [0x01])
        #expect(try OwnedFrame.maxData(1_000_000).encoded() == [0x06, 0x80, 0x0F, 0x42, 0x40])
        #expect(try OwnedFrame.dataBlocked(63).encoded() == [0x07, 0x3F])
        #expect(
            try decodeFrames([0x01, 0x06, 0x80, 0x0F, 0x42, 0x40, 0x07, 0x3F]) == [
                .ping, .maxData(1_000_000), .dataBlocked(63),
            ])
        #expect(throws: WireError.varIntOutOfRange(1 << 62)) { try Frame.maxData(1 << 62).encoded() }
    }

    @Test("DATAGRAM explicit bytes and the 8972-byte limit")
    func datagram() throws {
        let frame: OwnedFrame = .datagram(channel: ChannelID(2), data: [0xDE, 0xAD])
        #expect(try frame.encoded() == [0x04, 0x02, 0x02, 0xDE, 0xAD])
        #expect(try decodeFrames([0x04, 0x02, 0x02, 0xDE, 0xAD]) == [frame])
        // Length 8973 = 0x630D as a two-byte varint: 0x63 0x0D.
        #expect(
            frameDecodingError([0x04, 0x00, 0x63, 0x0D])
                == .lengthOutOfRange(field: .datagramLength, value: 8973, limit: 8972))
        #expect(frameDecodingError([0x04, 0x00, 0x63, 0x0C]) == .truncated(needed: 8972, available: 0))
        let tooBig: OwnedFrame = .datagram(channel: ChannelID(0), data: [UInt8](repeating: 0, count: 8973))
        #expect(throws: WireError.lengthOutOfRange(field: .datagramLength, value: 8973, limit: 8972)) {
            try tooBig.encoded()
        }
    }

    @Test("CLOSE explicit bytes; unknown codes round-trip")
    func close() throws {
        let frame: OwnedFrame = .close(CloseFrame(code: .protocolViolation, reason: "bad"))
        #expect(try frame.encoded() == [0x05, 0x01, 0x03, 0x62, 0x61, 0x64])
        #expect(try decodeFrames([0x05, 0x01, 0x03, 0x62, 0x61, 0x64]) == [frame])
        let unknown: OwnedFrame = .close(CloseFrame(code: CloseCode(rawValue: 4711), reason: ""))
        #expect(try decodeFrames(try unknown.encoded()) == [unknown])
        let accented: OwnedFrame = .close(CloseFrame(code: .left, reason: "au revoir, zoë 👋"))
        #expect(try decodeFrames(try accented.encoded()) == [accented])
    }

    @Test(
        "CLOSE reason: invalid UTF-8 and over-long reasons are rejected",
        arguments: [
            [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0x61, 0xF8, 0x88, 0x80, 0x80, 0x80],
        ] as [[UInt8]])
    func closeInvalidUTF8(reason: [UInt8]) {
        #expect(frameDecodingError([0x05, 0x00, UInt8(reason.count)] + reason) == .invalidUTF8)
    }

    @Test("CLOSE reason length limit is 256 bytes")
    func closeReasonLimit() throws {
        let maximal: OwnedFrame = .close(CloseFrame(code: .noError, reason: String(repeating: "x", count: 256)))
        #expect(try decodeFrames(try maximal.encoded()) == [maximal])
        let bytes: [UInt8] = [0x05, 0x00, 0x41, 0x01] + [UInt8](repeating: 0x78, count: 257)
        #expect(frameDecodingError(bytes) == .lengthOutOfRange(field: .closeReasonLength, value: 257, limit: 256))
        #expect(throws: WireError.lengthOutOfRange(field: .closeReasonLength, value: 257, limit: 256)) {
            try Frame.close(CloseFrame(code: .noError, reason: String(repeating: "x", count: 257))).encoded()
        }
    }

    @Test("PADDING runs are skipped and counted wherever they appear")
    func padding() throws {
        let bytes: [UInt8] = [0x00, 0x00, 0x01, 0x00, 0x07, 0x05, 0x00, 0x00, 0x00]
        try bytes.withUnsafeBytes { (raw) throws in
            var decoder = FrameDecoder(raw)
            #expect(try decoder.next() == .ping)
            #expect(try decoder.next() == .dataBlocked(5))
            #expect(try decoder.next() == nil)
            #expect(decoder.paddingLength == 6)
        }
        #expect(try decodeFrames([0, 0, 0, 0]).isEmpty)
        #expect(try decodeFrames([]).isEmpty)
        var padded = [UInt8](repeating: 0xEE, count: 4)
        try padded.withUnsafeMutableBytes { (raw) throws in
            var writer = ByteWriter(raw)
            try Frame.encodePadding(count: 3, into: &writer)
            #expect(writer.bytesWritten == 3)
        }
        #expect(padded == [0, 0, 0, 0xEE])
    }

    @Test(
        "unknown and reserved frame types are errors",
        arguments: [0x0C, 0x0F, 0x10, 0x1F, 0x20, 0x2F, 0x30, 0x3F] as [UInt8])
    func unknownTypes(type: UInt8) {
        #expect(frameDecodingError([0x01, type, 0x00]) == .unknownFrameType(UInt64(type)))
    }

    @Test("a multi-byte unknown frame type is reported with its value")
    func unknownLongType() {
        #expect(frameDecodingError([0x80, 0x01, 0x00, 0x00]) == .unknownFrameType(0x10000))
        #expect(frameDecodingError([0x40, 0x01]) == nil, "a non-minimal PING is accepted")
    }

    @Test("after an error the decoder stops")
    func stopsAfterError() throws {
        let bytes: [UInt8] = [0x01, 0x0C, 0x01]
        try bytes.withUnsafeBytes { (raw) throws in
            var decoder = FrameDecoder(raw)
            #expect(try decoder.next() == .ping)
            #expect(throws: WireError.unknownFrameType(0x0C)) { try decoder.next() }
            #expect(decoder.failed)
            #expect(try decoder.next() == nil)
        }
    }

    @Test("frames encode into a fixed buffer and report running out of room")
    func fixedBuffer() throws {
        var buffer = [UInt8](repeating: 0, count: 6)
        try buffer.withUnsafeMutableBytes { (raw) throws in
            var writer = ByteWriter(raw)
            try Frame.ping.encode(into: &writer)
            try Frame.maxData(1_000_000).encode(into: &writer)
            #expect(writer.remaining == 0)
            #expect(throws: WireError.bufferTooSmall(needed: 1, available: 0)) { try Frame.ping.encode(into: &writer) }
        }
        #expect(buffer == [0x01, 0x06, 0x80, 0x0F, 0x42, 0x40])
    }
}
