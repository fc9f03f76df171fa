import HuddleWire
import Testing

@Suite("MESSAGE frames")
struct MessageFrameTests {
    static let hello: OwnedFrame = .message(
        channel: ChannelID(7), sequence: MessageSequence(300), offset: 0, totalLength: 5, data: Array("hello".utf8))

    @Test("explicit bytes: channel 7, sequence 300, whole 5-byte message")
    func explicitBytes() throws {
        let bytes: [UInt8] = [0x03, 0x07, 0x41, 0x2C, 0x00, 0x05, 0x05, 0x68, 0x65, 0x6C, 0x6C, 0x6F]
        #expect(try Self.hello.encoded() == bytes)
        #expect(try decodeFrames(bytes) == [Self.hello])
    }

    @Test("decoded data is a view into the payload, not a copy")
    func zeroCopy() throws {
        let bytes = try Self.hello.encoded()
        try bytes.withUnsafeBytes { (raw) throws in
            var decoder = FrameDecoder(raw)
            guard case .message(let fragment) = try decoder.next() else {
                Issue.record("expected a MESSAGE frame")
                return
            }
            #expect(fragment.data.baseAddress == raw.baseAddress! + 7)
            #expect(fragment.copyData() == Array("hello".utf8))
            #expect(try decoder.next() == nil)
        }
    }

    @Test("an empty message is one empty fragment")
    func emptyMessage() throws {
        let empty: OwnedFrame = .message(
            channel: ChannelID(0), sequence: MessageSequence(0), offset: 0, totalLength: 0, data: [])
        #expect(try empty.encoded() == [0x03, 0, 0, 0, 0, 0])
        #expect(try decodeFrames([0x03, 0, 0, 0, 0, 0]) == [empty])
    }

    @Test("offset + length > total length is rejected")
    func fragmentOutOfBounds() throws {
        // offset 3, total 5, length 3.
        let bytes: [UInt8] = [0x03, 0x01, 0x00, 0x03, 0x05, 0x03, 0xAA, 0xBB, 0xCC]
        #expect(frameDecodingError(bytes) == .fragmentOutOfBounds(offset: 3, length: 3, totalLength: 5))
        // The bounds check comes before the truncation check.
        #expect(frameDecodingError(Array(bytes[..<6])) == .fragmentOutOfBounds(offset: 3, length: 3, totalLength: 5))
        let exact: [UInt8] = [0x03, 0x01, 0x00, 0x03, 0x05, 0x02, 0xAA, 0xBB]
        #expect(try decodeFrames(exact).count == 1)
        let data = [UInt8](repeating: 1, count: 4)
        data.withUnsafeBytes { raw in
            let fragment = MessageFragment(
                channel: ChannelID(1), sequence: MessageSequence(0), offset: 2, totalLength: 5, data: raw)
            #expect(throws: WireError.fragmentOutOfBounds(offset: 2, length: 4, totalLength: 5)) {
                try Frame.message(fragment).encoded()
            }
        }
    }

    @Test("a total length over 256 KiB is rejected; exactly 256 KiB is accepted")
    func totalLengthLimit() throws {
        // total = 262145 = 0x40001 → 4-byte varint 0x80 0x04 0x00 0x01.
        let over: [UInt8] = [0x03, 0x00, 0x00, 0x00, 0x80, 0x04, 0x00, 0x01, 0x00]
        #expect(
            frameDecodingError(over) == .lengthOutOfRange(field: .messageTotalLength, value: 262_145, limit: 262_144))
        let atLimit: [UInt8] = [0x03, 0x00, 0x00, 0x00, 0x80, 0x04, 0x00, 0x00, 0x00]
        #expect(
            try decodeFrames(atLimit) == [
                .message(channel: ChannelID(0), sequence: MessageSequence(0), offset: 0, totalLength: 262_144, data: [])
            ])
        let encodeOver: OwnedFrame = .message(
            channel: ChannelID(0), sequence: MessageSequence(0), offset: 0, totalLength: 262_145, data: [])
        #expect(throws: WireError.lengthOutOfRange(field: .messageTotalLength, value: 262_145, limit: 262_144)) {
            try encodeOver.encoded()
        }
    }

    @Test("a data length of 2^62 - 1 is rejected as out of bounds, never allocated")
    func hugeDataLength() {
        let huge: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        let bytes: [UInt8] = [0x03, 0x00, 0x00, 0x00, 0x05] + huge
        #expect(frameDecodingError(bytes) == .fragmentOutOfBounds(offset: 0, length: (1 << 62) - 1, totalLength: 5))
        let hugeTotal: [UInt8] = [0x03, 0x00, 0x00, 0x00] + huge + [0x00]
        #expect(
            frameDecodingError(hugeTotal)
                == .lengthOutOfRange(field: .messageTotalLength, value: (1 << 62) - 1, limit: 262_144))
    }

    @Test("a data length beyond the payload is truncated before any byte is read")
    func truncatedData() {
        // total 262144, length 262144, but only 3 data bytes present.
        let bytes: [UInt8] = [0x03, 0x00, 0x00, 0x00, 0x80, 0x04, 0x00, 0x00, 0x80, 0x04, 0x00, 0x00, 1, 2, 3]
        #expect(frameDecodingError(bytes) == .truncated(needed: 262_144, available: 3))
    }

    @Test("channel 256 is rejected")
    func channelLimit() {
        #expect(
            frameDecodingError([0x03, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00])
                == .valueOutOfRange(field: .channel, value: 256, limit: 255))
    }

    @Test("maxDataLength fills the space exactly across varint length boundaries")
    func maxDataLength() throws {
        // type 1 + channel 1 + sequence 1 + offset 64 (2) + total 100000 (4) + data length (1..4).
        let emptyHeader = MessageFragment.headerLength(
            channel: ChannelID(3), sequence: MessageSequence(1), offset: 64, totalLength: 100_000, dataLength: 0)
        #expect(emptyHeader == 10)
        for space in [0, 9, 10, 11, 73, 74, 75, 76, 1168, 16_400, 20_000] {
            let fitted = MessageFragment.maxDataLength(
                fitting: space, channel: ChannelID(3), sequence: MessageSequence(1), offset: 64, totalLength: 100_000)
            guard let length = fitted else {
                #expect(space < emptyHeader, "an empty fragment fits in \(space) bytes")
                continue
            }
            let header = MessageFragment.headerLength(
                channel: ChannelID(3), sequence: MessageSequence(1), offset: 64, totalLength: 100_000,
                dataLength: length)
            #expect(header + length <= space)
            let oneMore = MessageFragment.headerLength(
                channel: ChannelID(3), sequence: MessageSequence(1), offset: 64, totalLength: 100_000,
                dataLength: length + 1)
            #expect(oneMore + length + 1 > space, "space \(space): \(length) is not the maximum")
        }
        #expect(
            MessageFragment.maxDataLength(
                fitting: 1168, channel: ChannelID(0), sequence: MessageSequence(0), offset: 90, totalLength: 100)
                == 10)
    }
}
