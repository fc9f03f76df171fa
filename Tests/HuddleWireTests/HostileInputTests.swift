import Foundation
import HuddleWire
import PropertyBased
import Testing

@Suite("Hostile input never crashes and always yields a typed error")
struct HostileInputTests {
    @Test("every truncation of every frame type is reported as truncated", arguments: 0...6)
    func frameTruncations(kind: Int) async {
        let generator = Generator<OwnedFrame, Shrink.None<OwnedFrame>>(run: { rng in
            WireGen.frame(kind: kind, using: &rng)
        })
        await propertyCheck(count: 40, input: generator) { frame in
            let bytes = try frame.encoded()
            for cut in 1..<bytes.count {
                let error = frameDecodingError(Array(bytes[..<cut]))
                guard case .truncated = error else {
                    Issue.record("\(frame) cut at \(cut) of \(bytes.count): \(String(describing: error))")
                    return
                }
            }
        }
    }

    @Test("every truncation and extension of every packet layout is rejected")
    func packetTruncations() async {
        await propertyCheck(
            count: 20, input: WireGen.initiation, WireGen.response, WireGen.cookieReply, WireGen.transportHeader
        ) { initiation, response, cookie, header in
            let transport = try header.encoded() + [UInt8](repeating: 0xAB, count: 16)
            for bytes in [try initiation.encoded(), try response.encoded(), try cookie.encoded(), transport] {
                for cut in 0..<bytes.count {
                    let error = wireError { () throws(WireError) in try PacketClassifier.classify(Array(bytes[..<cut]))
                    }
                    #expect(error == .truncated(needed: cut == 0 ? 1 : bytes.count, available: cut))
                }
                guard bytes[0] != PacketType.transportData.rawValue else { continue }
                for extra in 1...16 {
                    let error = wireError { () throws(WireError) in
                        try PacketClassifier.classify(bytes + [UInt8](repeating: 0, count: extra))
                    }
                    #expect(error == .trailingBytes(count: extra))
                }
            }
        }
    }

    @Test("random bytes never crash any decoder")
    func randomBytes() async {
        await propertyCheck(count: 2000, input: WireGen.hostileBytes) { bytes in
            let outcome = WireExercise.run(bytes)
            if outcome.packetType == nil {
                #expect(outcome.classifyError != nil)
            }
        }
    }

    @Test("random frame-type-led bytes never crash the frame decoder")
    func randomFrameBytes() async {
        await propertyCheck(count: 2000, input: WireGen.hostileBytes, Gen.uint8(in: 0...7)) { tail, type in
            _ = WireExercise.frames([type] + tail)
        }
    }

    @Test("flipping any single bit of a valid transport packet never crashes")
    func bitFlips() throws {
        var datagram = try TransportHeader(receiverIndex: ReceiverIndex(9), packetNumber: PacketNumber(77)).encoded()
        let frames: [OwnedFrame] = [
            .ack(AckFrame(ackDelay: 10, ranges: try AckRanges(descending: [70...76, 50...60]))),
            .message(channel: ChannelID(1), sequence: MessageSequence(4), offset: 0, totalLength: 3, data: [1, 2, 3]),
            .close(CloseFrame(code: .tooLarge, reason: "é")),
        ]
        for frame in frames { try frame.encode(into: &datagram) }
        datagram += [UInt8](repeating: 0, count: 16)
        #expect(WireExercise.run(datagram).frames == frames)
        for bit in 0..<(datagram.count * 8) {
            var flipped = datagram
            flipped[bit / 8] ^= 1 << (bit % 8)
            _ = WireExercise.run(flipped)
        }
    }

    @Test("claimed lengths of 2^62 - 1 in every length field are rejected without allocating")
    func maximalClaims() {
        let huge: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        let max = UInt64((1 << 62) - 1)
        #expect(
            frameDecodingError([0x04, 0x00] + huge)
                == .lengthOutOfRange(field: .datagramLength, value: max, limit: 8972))
        #expect(
            frameDecodingError([0x05, 0x00] + huge)
                == .lengthOutOfRange(field: .closeReasonLength, value: max, limit: 256))
        #expect(frameDecodingError([0x02, 0x00, 0x00] + huge) == .tooManyAckRanges(count: 1 << 62, limit: 32))
        #expect(frameDecodingError([0x02] + huge + [0x00, 0x00] + huge) == nil)
        var reader = ByteReader(UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(throws: WireError.truncated(needed: Int(max), available: 0)) { try reader.readBytes(count: max) }
        #expect(throws: WireError.truncated(needed: Int.max, available: 0)) { try reader.readBytes(count: UInt64.max) }
    }

    /// Every committed fuzzing failure and seed stays harmless (FZ1/FZ3 regression corpus).
    @Test("fuzzing FailCases and seed corpus replay without crashing")
    func replayFuzzCorpora() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("FuzzTesting")
        var replayed = 0
        for folder in ["FailCases/wire", "Corpus/wire"] {
            let directory = root.appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() where !name.hasSuffix(".md") {
                let data = try Data(contentsOf: directory.appendingPathComponent(name))
                _ = WireExercise.run([UInt8](data))
                replayed += 1
            }
        }
        #expect(replayed > 0, "no fuzzing corpus found under \(root.path)")
    }
}
