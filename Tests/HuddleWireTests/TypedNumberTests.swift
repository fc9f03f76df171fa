import HuddleWire
import PropertyBased
import Testing

@Suite("Typed numbers")
struct TypedNumberTests {
    @Test("RFC 1982: serial numbers compare across the 32-bit wrap")
    func serialWrap() {
        let last = SerialNumber32(UInt32.max)
        let zero = SerialNumber32(0)
        #expect(last.precedes(zero))
        #expect(zero.follows(last))
        #expect(!zero.precedes(last))
        #expect(last.distance(to: zero) == 1)
        #expect(zero.distance(to: last) == -1)
        #expect(last.advanced(by: 1) == zero)
        #expect(last.advanced(by: 5) == SerialNumber32(4))
        #expect(SerialNumber32(0xFFFF_FFF0).precedes(SerialNumber32(0x10)))
        #expect(SerialNumber32(5).compare(SerialNumber32(5)) == .same)
    }

    @Test("RFC 1982: numbers exactly 2^31 apart are unordered; 2^31 - 1 apart are ordered")
    func serialHalfway() {
        let a = SerialNumber32(0)
        let halfway = SerialNumber32(1 << 31)
        #expect(a.compare(halfway) == nil)
        #expect(halfway.compare(a) == nil)
        #expect(!a.precedes(halfway) && !a.follows(halfway))
        #expect(a.distance(to: halfway) == nil)
        let justBefore = SerialNumber32((1 << 31) - 1)
        #expect(a.precedes(justBefore))
        #expect(a.distance(to: justBefore) == Int32.max)
        let justAfter = SerialNumber32((1 << 31) + 1)
        #expect(a.follows(justAfter))
        #expect(a.distance(to: justAfter) == -Int32.max)
        #expect(a.advanced(by: SerialNumber32.maxStep) == justBefore)
    }

    @Test("RFC 1982: s precedes s + k for every k in 1 ..< 2^31, from any start")
    func serialAdvancePrecedes() async {
        await propertyCheck(count: 300, input: Gen.uint32(), Gen.uint32(in: 1...SerialNumber32.maxStep)) {
            start, step in
            let s = SerialNumber32(start)
            let t = s.advanced(by: step)
            #expect(s.precedes(t))
            #expect(t.follows(s))
            #expect(s.distance(to: t) == Int32(step))
        }
    }

    @Test("packet numbers order as integers and never wrap")
    func packetNumbers() {
        #expect(PacketNumber(1) < PacketNumber(2))
        #expect(PacketNumber(UInt64.max - 1).next == PacketNumber(UInt64.max))
        #expect(PacketNumber(UInt64.max).next == nil)
        #expect(PacketNumber.maxAcknowledgeable.rawValue == (1 << 62) - 1)
        #expect(MessageSequence(7).next == MessageSequence(8))
        #expect(MessageSequence.max.next == nil)
    }

    @Test("channel identifiers read from the wire are limited to 0 ..< 256")
    func channels() throws {
        #expect(try ChannelID(validating: 255) == ChannelID(255))
        #expect(throws: WireError.valueOutOfRange(field: .channel, value: 256, limit: 255)) {
            try ChannelID(validating: 256)
        }
        #expect(WireLimits.maxChannels == 256)
    }

    @Test("descriptions are human-readable")
    func descriptions() {
        #expect(ReceiverIndex(0xAB).description == "000000ab")
        #expect(CloseCode.protocolViolation.description == "protocolViolation")
        #expect(CloseCode(rawValue: 99).description == "unknown(99)")
        #expect(FrameType.ack.description == "ACK")
        #expect(FrameType(rawValue: 0x15).isReserved)
        #expect(FrameType(rawValue: 0x2F).isReserved)
        #expect(!FrameType(rawValue: 0x30).isReserved)
        #expect(TransportFlags(rawValue: 0x5).description == "0x05")
        #expect(
            WireError.truncated(needed: 148, available: 147).description
                == "truncated input: needed 148 bytes, only 147 available")
        #expect(
            WireError.lengthOutOfRange(field: .messageTotalLength, value: 262_145, limit: 262_144).description
                == "messageTotalLength 262145 exceeds the limit of 262144")
        #expect(WireError.unknownFrameType(0x1F).description == "unknown frame type 0x1f")
    }

    @Test("named close codes have the documented values")
    func closeCodes() {
        let codes: [CloseCode] = [
            .noError, .protocolViolation, .internalError, .idleTimeout, .handshakeTimeout, .sessionEnded, .left,
            .flowControlError, .tooLarge,
        ]
        #expect(codes.map(\.rawValue) == Array(0...8))
    }
}
