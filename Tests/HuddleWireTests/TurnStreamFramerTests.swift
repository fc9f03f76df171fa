import Testing

@testable import HuddleWire

@Suite("TURN stream framing")
struct TurnStreamFramerTests {
    /// A STUN Binding request (20 bytes, no attributes), a ChannelData frame of 5 bytes padded to 8, and a STUN
    /// message with one 8-byte attribute.
    let frames: [[UInt8]] = [
        [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 1, count: 12),
        [0x40, 0x00, 0x00, 0x05, 1, 2, 3, 4, 5, 0, 0, 0],
        [0x01, 0x01, 0x00, 0x08, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 2, count: 12)
            + Array(repeating: 3, count: 8),
    ]

    /// Feeds `stream` to a framer in chunks of `size` and returns the frames it cut.
    func cut(_ stream: [UInt8], chunk size: Int) throws -> [[UInt8]] {
        var framer = TurnStreamFramer()
        var out: [[UInt8]] = []
        var offset = 0
        while offset < stream.count {
            var chunk = Array(stream[offset..<min(offset + size, stream.count)])
            try chunk.withUnsafeMutableBytes { raw in try framer.consume(raw) { out.append(Array($0)) } }
            offset += size
        }
        #expect(framer.bufferedBytes == 0)
        return out
    }

    @Test("Frames come out whole however TCP cuts the stream: every chunk size from 1 byte to all at once")
    func everyChunking() throws {
        let stream = frames.flatMap { $0 }
        for size in 1...stream.count {
            #expect(try cut(stream, chunk: size) == frames, "chunks of \(size)")
        }
    }

    @Test("ChannelData's padding is part of its frame: the next frame starts after it")
    func padding() throws {
        let out = try cut(frames[1] + frames[0], chunk: 3)
        #expect(out.map(\.count) == [12, 20])
        #expect(try ChannelData.parse(out[0].withUnsafeBytes { UnsafeRawBufferPointer($0) }).data == 4..<9)
    }

    @Test("The largest frame (a 16-bit length behind the STUN header) is held until whole, and no more is held")
    func largestFrame() throws {
        var frame: [UInt8] = [0x01, 0x01, 0xFF, 0xFC, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 9, count: 12)
        frame += Array(repeating: 7, count: 0xFFFC)
        var framer = TurnStreamFramer()
        var delivered: [Int] = []
        var head = Array(frame[0..<30_000])
        try head.withUnsafeMutableBytes { try framer.consume($0) { delivered.append($0.count) } }
        #expect(delivered.isEmpty && framer.bufferedBytes == 30_000)
        var tail = Array(frame[30_000...]) + frames[0]
        try tail.withUnsafeMutableBytes { try framer.consume($0) { delivered.append($0.count) } }
        #expect(delivered == [frame.count, 20])
        #expect(frame.count <= TurnStreamFramer.maxFrameLength)
        #expect(framer.bufferedBytes == 0)
    }

    @Test("A frame starting with bits 10 or 11 (neither STUN nor ChannelData) is an error: the stream lost its framing")
    func lostFraming() {
        for first: UInt8 in [0x80, 0xC0, 0xFF] {
            var framer = TurnStreamFramer()
            var bytes = frames[0] + [first, 0, 0, 4, 1, 2, 3, 4]
            var delivered = 0
            #expect(throws: StunError.invalidStreamFrame(firstByte: first)) {
                try bytes.withUnsafeMutableBytes { try framer.consume($0) { _ in delivered += 1 } }
            }
            #expect(delivered == 1)
        }
    }
}
