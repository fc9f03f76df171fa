import HuddleWire
import PropertyBased
import Testing

@Suite("Round trips: decode(encode(x)) == x")
struct RoundTripPropertyTests {
    @Test("every frame type round-trips on its own", arguments: 0...6)
    func singleFrames(kind: Int) async {
        let generator = Generator<OwnedFrame, Shrink.None<OwnedFrame>>(run: { rng in
            WireGen.frame(kind: kind, using: &rng)
        })
        await propertyCheck(count: 150, input: generator) { frame in
            let bytes = try frame.encoded()
            #expect(bytes.count == frame.encodedLength)
            #expect(try decodeFrames(bytes) == [frame])
        }
    }

    @Test("sequences of frames with padding in between round-trip")
    func frameSequences() async {
        await propertyCheck(count: 200, input: WireGen.frameList, Gen.int(in: 0...3)) { frames, padding in
            var bytes: [UInt8] = []
            for frame in frames {
                try frame.encode(into: &bytes)
                bytes += [UInt8](repeating: 0, count: padding)
            }
            #expect(try decodeFrames(bytes) == frames)
        }
    }

    @Test("a full transport packet (header + frames + tag) round-trips through the null cipher")
    func transportPackets() async {
        await propertyCheck(count: 150, input: WireGen.transportHeader, WireGen.frameList) { header, frames in
            var datagram = try header.encoded()
            var room = TransportHeader.maxPlaintextLength(datagramSize: WireLimits.maxDatagramSize)
            var sent: [OwnedFrame] = []
            for frame in frames where frame.encodedLength <= room {
                try frame.encode(into: &datagram)
                room -= frame.encodedLength
                sent.append(frame)
            }
            datagram += [UInt8](repeating: 0, count: TransportHeader.tagLength)
            let outcome = WireExercise.run(datagram)
            #expect(outcome.packetType == .transportData)
            #expect(outcome.frameError == nil)
            #expect(outcome.frames == sent)
        }
    }

    @Test("frames written through ByteWriter match the array encoder")
    func writerMatchesArray() async {
        await propertyCheck(count: 150, input: WireGen.anyFrame) { frame in
            let viaArray = try frame.encoded()
            var buffer = [UInt8](repeating: 0xEE, count: frame.encodedLength + 3)
            let written = try buffer.withUnsafeMutableBytes { raw throws in
                var writer = ByteWriter(raw)
                try frame.encode(into: &writer)
                return writer.bytesWritten
            }
            #expect(written == viaArray.count)
            #expect(Array(buffer[..<written]) == viaArray)
            #expect(buffer[written...].allSatisfy { $0 == 0xEE })
        }
    }
}
