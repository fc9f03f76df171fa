import HuddleWire
import PropertyBased
import Testing

@Suite("Handshake layouts")
struct HandshakeLayoutTests {
    static func pattern(_ start: UInt8, _ count: Int) -> [UInt8] {
        (0..<count).map { start &+ UInt8($0) }
    }

    static let initiation = try! HandshakeInitiation(
        senderIndex: ReceiverIndex(0x0403_0201), ephemeral: pattern(0x10, 32), encryptedStatic: pattern(0x40, 48),
        encryptedPayload: pattern(0x80, 32), mac1: pattern(0xA0, 16), mac2: pattern(0xC0, 16))

    @Test("initiation: 152 bytes, WireGuard field offsets with a 32-byte payload, little-endian index")
    func initiationBytes() throws {
        let bytes = try Self.initiation.encoded()
        #expect(bytes.count == 152)
        #expect(Array(bytes[0..<8]) == [1, 0, 0, 0, 0x01, 0x02, 0x03, 0x04])
        #expect(Array(bytes[8..<40]) == Self.pattern(0x10, 32))
        #expect(Array(bytes[40..<88]) == Self.pattern(0x40, 48))
        #expect(Array(bytes[88..<120]) == Self.pattern(0x80, 32))
        #expect(Array(bytes[HandshakeInitiation.mac1Offset..<136]) == Self.pattern(0xA0, 16))
        #expect(Array(bytes[HandshakeInitiation.mac2Offset...]) == Self.pattern(0xC0, 16))
        #expect(try HandshakeInitiation(decoding: bytes) == Self.initiation)
        #expect(try PacketClassifier.classify(bytes) == .handshakeInitiation)
    }

    @Test("initiation of 151 or 153 bytes is rejected by the classifier and the decoder")
    func initiationWrongLength() throws {
        let bytes = try Self.initiation.encoded()
        let short = Array(bytes.dropLast())
        let long = bytes + [0]
        #expect(throws: WireError.truncated(needed: 152, available: 151)) { try PacketClassifier.classify(short) }
        #expect(throws: WireError.truncated(needed: 152, available: 151)) { try HandshakeInitiation(decoding: short) }
        #expect(throws: WireError.trailingBytes(count: 1)) { try PacketClassifier.classify(long) }
        #expect(throws: WireError.trailingBytes(count: 1)) { try HandshakeInitiation(decoding: long) }
    }

    @Test("non-zero reserved bytes are rejected for every handshake type", arguments: [1, 2, 3])
    func reservedBytes(offset: Int) throws {
        let response = try HandshakeResponse(
            senderIndex: ReceiverIndex(1), receiverIndex: ReceiverIndex(2), ephemeral: Self.pattern(0, 32),
            encryptedNothing: Self.pattern(0, 16))
        let cookie = try CookieReply(
            receiverIndex: ReceiverIndex(3), nonce: Self.pattern(0, 24), encryptedCookie: Self.pattern(0, 32))
        for var bytes in [try Self.initiation.encoded(), try response.encoded(), try cookie.encoded()] {
            bytes[offset] = 0x80
            #expect(throws: WireError.nonZeroReserved(offset: offset)) { try PacketClassifier.classify(bytes) }
        }
        var bytes = try Self.initiation.encoded()
        bytes[offset] = 1
        #expect(throws: WireError.nonZeroReserved(offset: offset)) { try HandshakeInitiation(decoding: bytes) }
        bytes = try response.encoded()
        bytes[offset] = 1
        #expect(throws: WireError.nonZeroReserved(offset: offset)) { try HandshakeResponse(decoding: bytes) }
        bytes = try cookie.encoded()
        bytes[offset] = 1
        #expect(throws: WireError.nonZeroReserved(offset: offset)) { try CookieReply(decoding: bytes) }
    }

    @Test("response: 92 bytes with both indices little-endian")
    func responseBytes() throws {
        let response = try HandshakeResponse(
            senderIndex: ReceiverIndex(0x1122_3344), receiverIndex: ReceiverIndex(0x5566_7788),
            ephemeral: Self.pattern(0x10, 32), encryptedNothing: Self.pattern(0x40, 16), mac1: Self.pattern(0x60, 16),
            mac2: Self.pattern(0x70, 16))
        let bytes = try response.encoded()
        #expect(bytes.count == 92)
        #expect(Array(bytes[0..<12]) == [2, 0, 0, 0, 0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55])
        #expect(Array(bytes[12..<44]) == Self.pattern(0x10, 32))
        #expect(Array(bytes[44..<60]) == Self.pattern(0x40, 16))
        #expect(Array(bytes[HandshakeResponse.mac1Offset..<76]) == Self.pattern(0x60, 16))
        #expect(Array(bytes[HandshakeResponse.mac2Offset...]) == Self.pattern(0x70, 16))
        #expect(try HandshakeResponse(decoding: bytes) == response)
        #expect(try PacketClassifier.classify(bytes) == .handshakeResponse)
        #expect(throws: WireError.truncated(needed: 92, available: 91)) {
            try PacketClassifier.classify(bytes.dropLast())
        }
        #expect(throws: WireError.trailingBytes(count: 2)) { try PacketClassifier.classify(bytes + [0, 0]) }
    }

    @Test("cookie reply: 64 bytes, smaller than what it answers")
    func cookieBytes() throws {
        let cookie = try CookieReply(
            receiverIndex: ReceiverIndex(0xDEAD_BEEF), nonce: Self.pattern(0x10, 24),
            encryptedCookie: Self.pattern(0x40, 32))
        let bytes = try cookie.encoded()
        #expect(bytes.count == 64)
        #expect(Array(bytes[0..<8]) == [3, 0, 0, 0, 0xEF, 0xBE, 0xAD, 0xDE])
        #expect(Array(bytes[8..<32]) == Self.pattern(0x10, 24))
        #expect(Array(bytes[32...]) == Self.pattern(0x40, 32))
        #expect(try CookieReply(decoding: bytes) == cookie)
        #expect(CookieReply.encodedLength < HandshakeResponse.encodedLength)
        #expect(HandshakeResponse.encodedLength < HandshakeInitiation.encodedLength)
    }

    @Test("a decoder given another packet type says which type it expected")
    func wrongType() throws {
        var bytes = try Self.initiation.encoded()
        bytes[0] = 2
        #expect(throws: WireError.unexpectedPacketType(expected: .handshakeInitiation, actual: 2)) {
            try HandshakeInitiation(decoding: bytes)
        }
    }

    @Test("fields of the wrong size are rejected when building a message")
    func fieldLengths() {
        #expect(throws: WireError.invalidFieldLength(field: .ephemeral, expected: 32, actual: 31)) {
            try HandshakeInitiation(
                senderIndex: ReceiverIndex(0), ephemeral: Self.pattern(0, 31), encryptedStatic: Self.pattern(0, 48),
                encryptedPayload: Self.pattern(0, 32))
        }
        #expect(throws: WireError.invalidFieldLength(field: .encryptedCookie, expected: 32, actual: 33)) {
            try CookieReply(
                receiverIndex: ReceiverIndex(0), nonce: Self.pattern(0, 24), encryptedCookie: Self.pattern(0, 33))
        }
        var message = Self.initiation
        message.mac2 = []
        #expect(throws: WireError.invalidFieldLength(field: .mac2, expected: 16, actual: 0)) { try message.encoded() }
    }

    @Test("encoding into a buffer that is one byte short fails without writing past it")
    func bufferTooSmall() {
        var buffer = [UInt8](repeating: 0xEE, count: 152)
        buffer.withUnsafeMutableBytes { raw in
            var writer = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: raw[0..<151]))
            #expect(throws: WireError.bufferTooSmall(needed: 152, available: 151)) {
                try Self.initiation.encode(into: &writer)
            }
            #expect(writer.bytesWritten == 0)
        }
        #expect(buffer[151] == 0xEE)
    }

    @Test("handshake layouts round-trip byte for byte")
    func roundTrips() async {
        await propertyCheck(count: 100, input: WireGen.initiation, WireGen.response, WireGen.cookieReply) {
            initiation, response, cookie in
            let a = try initiation.encoded()
            #expect(try HandshakeInitiation(decoding: a) == initiation)
            #expect(try HandshakeInitiation(decoding: a).encoded() == a)
            let b = try response.encoded()
            #expect(try HandshakeResponse(decoding: b) == response)
            let c = try cookie.encoded()
            #expect(try CookieReply(decoding: c) == cookie)
            #expect(try PacketClassifier.classify(a) == .handshakeInitiation)
            #expect(try PacketClassifier.classify(b) == .handshakeResponse)
            #expect(try PacketClassifier.classify(c) == .cookieReply)
        }
    }
}
