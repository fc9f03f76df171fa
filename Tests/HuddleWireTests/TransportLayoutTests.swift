import HuddleWire
import PropertyBased
import Testing

@Suite("Transport header and datagram classification")
struct TransportLayoutTests {
    static let header = TransportHeader(
        flags: TransportFlags(rawValue: 0xA5), receiverIndex: ReceiverIndex(0x0403_0201),
        packetNumber: PacketNumber(0x0807_0605_0403_0201))

    @Test("header: 16 bytes, type 4, flags, zero reserved, LE index, LE packet number")
    func headerBytes() throws {
        let bytes = try Self.header.encoded()
        #expect(bytes == [4, 0xA5, 0, 0, 1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8])
        let decoded = try bytes.withUnsafeBytes { try TransportHeader(decoding: $0) }
        #expect(decoded == Self.header)
        #expect(decoded.flags.rawValue == 0xA5, "unknown flag bits are preserved")
    }

    @Test("a transport packet splits into associated data, ciphertext and tag")
    func packetSplit() throws {
        var datagram = try Self.header.encoded()
        datagram += [0xC1, 0xC2, 0xC3] + [UInt8](repeating: 0x7A, count: 16)
        #expect(try PacketClassifier.classify(datagram) == .transportData)
        try datagram.withUnsafeBytes { (raw) throws in
            let packet = try TransportPacket(decoding: raw)
            #expect(packet.header == Self.header)
            #expect(Array(packet.associatedData) == Array(datagram[0..<16]))
            #expect(Array(packet.ciphertext) == [0xC1, 0xC2, 0xC3])
            #expect(Array(packet.tag) == [UInt8](repeating: 0x7A, count: 16))
        }
    }

    @Test("a transport packet shorter than header + tag is truncated")
    func transportTooShort() throws {
        let datagram = try Self.header.encoded() + [UInt8](repeating: 0, count: 15)
        #expect(throws: WireError.truncated(needed: 32, available: 31)) { try PacketClassifier.classify(datagram) }
        #expect(throws: WireError.truncated(needed: 32, available: 31)) {
            try datagram.withUnsafeBytes { _ = try TransportPacket(decoding: $0) }
        }
        let minimal = try Self.header.encoded() + [UInt8](repeating: 0, count: 16)
        #expect(try PacketClassifier.classify(minimal) == .transportData)
    }

    @Test("transport reserved bytes must be zero", arguments: [2, 3])
    func transportReserved(offset: Int) throws {
        var datagram = try Self.header.encoded() + [UInt8](repeating: 0, count: 16)
        datagram[offset] = 1
        #expect(throws: WireError.nonZeroReserved(offset: offset)) { try PacketClassifier.classify(datagram) }
        #expect(throws: WireError.nonZeroReserved(offset: offset)) {
            try datagram.withUnsafeBytes { _ = try TransportHeader(decoding: $0) }
        }
    }

    @Test("datagrams over 8972 bytes are rejected; 8972 is accepted")
    func datagramSizeLimit() throws {
        var datagram = try Self.header.encoded() + [UInt8](repeating: 0, count: 8973 - 16)
        #expect(datagram.count == 8973)
        #expect(throws: WireError.lengthOutOfRange(field: .datagram, value: 8973, limit: 8972)) {
            try PacketClassifier.classify(datagram)
        }
        #expect(throws: WireError.lengthOutOfRange(field: .datagram, value: 8973, limit: 8972)) {
            try datagram.withUnsafeBytes { _ = try TransportPacket(decoding: $0) }
        }
        datagram.removeLast()
        #expect(try PacketClassifier.classify(datagram) == .transportData)
        #expect(throws: WireError.lengthOutOfRange(field: .datagram, value: 8972, limit: 1200)) {
            try PacketClassifier.classify(datagram, maxDatagramSize: WireLimits.defaultMaxDatagramSize)
        }
    }

    @Test("unknown packet types and empty datagrams are rejected", arguments: [0, 11, 0x80, 0xFF] as [UInt8])
    func unknownTypes(type: UInt8) {
        #expect(throws: WireError.unknownPacketType(type)) {
            try PacketClassifier.classify([type] + [UInt8](repeating: 0, count: 147))
        }
        #expect(throws: WireError.truncated(needed: 1, available: 0)) { try PacketClassifier.classify([]) }
    }

    @Test("plaintext room in a default-size datagram is 1168 bytes")
    func plaintextRoom() {
        #expect(TransportHeader.maxPlaintextLength(datagramSize: WireLimits.defaultMaxDatagramSize) == 1168)
        #expect(TransportHeader.maxPlaintextLength(datagramSize: 10) == 0)
    }

    @Test("transport headers round-trip, all 64 packet-number bits included")
    func roundTrip() async {
        await propertyCheck(count: 300, input: WireGen.transportHeader) { header in
            let bytes = try header.encoded()
            #expect(bytes.count == 16)
            let decoded = try bytes.withUnsafeBytes { try TransportHeader(decoding: $0) }
            #expect(decoded == header)
        }
    }
}
