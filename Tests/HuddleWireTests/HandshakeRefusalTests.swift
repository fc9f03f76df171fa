import HuddleWire
import Testing

@Suite("Handshake refusal layout")
struct HandshakeRefusalTests {
    static func pattern(_ start: UInt8, _ count: Int) -> [UInt8] {
        (0..<count).map { start &+ UInt8($0) }
    }

    static let refusal = try! HandshakeRefusal(
        receiverIndex: ReceiverIndex(0xDEAD_BEEF), nonce: pattern(0x10, 24), encryptedPrologue: pattern(0x40, 48))

    @Test("refusal: 80 bytes, type 10, little-endian index, smaller than the initiation it answers")
    func bytes() throws {
        let bytes = try Self.refusal.encoded()
        #expect(bytes.count == 80)
        #expect(Array(bytes[0..<8]) == [10, 0, 0, 0, 0xEF, 0xBE, 0xAD, 0xDE])
        #expect(Array(bytes[0..<8]) == Self.refusal.header)
        #expect(Array(bytes[8..<32]) == Self.pattern(0x10, 24))
        #expect(Array(bytes[32...]) == Self.pattern(0x40, 48))
        #expect(try HandshakeRefusal(decoding: bytes) == Self.refusal)
        #expect(try PacketClassifier.classify(bytes) == .handshakeRefusal)
        #expect(HandshakeRefusal.encodedLength < HandshakeInitiation.encodedLength)
    }

    @Test("wrong lengths, reserved bytes and field sizes are typed errors")
    func rejected() throws {
        let bytes = try Self.refusal.encoded()
        #expect(throws: WireError.truncated(needed: 80, available: 79)) {
            try PacketClassifier.classify(bytes.dropLast())
        }
        #expect(throws: WireError.trailingBytes(count: 1)) { try PacketClassifier.classify(bytes + [0]) }
        for offset in 1...3 {
            var changed = bytes
            changed[offset] = 1
            #expect(throws: WireError.nonZeroReserved(offset: offset)) { try PacketClassifier.classify(changed) }
            #expect(throws: WireError.nonZeroReserved(offset: offset)) { try HandshakeRefusal(decoding: changed) }
        }
        #expect(throws: WireError.invalidFieldLength(field: .encryptedPrologue, expected: 48, actual: 47)) {
            try HandshakeRefusal(
                receiverIndex: ReceiverIndex(1), nonce: Self.pattern(0, 24), encryptedPrologue: Self.pattern(0, 47))
        }
        #expect(throws: WireError.invalidFieldLength(field: .refusalNonce, expected: 24, actual: 12)) {
            try HandshakeRefusal(
                receiverIndex: ReceiverIndex(1), nonce: Self.pattern(0, 12), encryptedPrologue: Self.pattern(0, 48))
        }
    }

    @Test("the plaintext names a prologue of 1 to 31 bytes: length, bytes, zero padding")
    func plaintext() throws {
        let named = try #require(HandshakeRefusal.plaintext(naming: Array("huddle/2".utf8)))
        #expect(named.count == 32)
        #expect(Array(named[0..<9]) == [8] + Array("huddle/2".utf8))
        #expect(named[9...].allSatisfy { $0 == 0 })
        #expect(HandshakeRefusal.prologue(inPlaintext: named) == Array("huddle/2".utf8))
        let longest = [UInt8](repeating: 0x61, count: 31)
        #expect(HandshakeRefusal.plaintext(naming: longest).flatMap(HandshakeRefusal.prologue(inPlaintext:)) == longest)
        #expect(HandshakeRefusal.plaintext(naming: longest + [0x61]) == nil)
        #expect(HandshakeRefusal.plaintext(naming: []) == nil)
        var padded = named
        padded[31] = 1
        #expect(HandshakeRefusal.prologue(inPlaintext: padded) == nil)
        var zeroLength = named
        zeroLength[0] = 0
        #expect(HandshakeRefusal.prologue(inPlaintext: zeroLength) == nil)
        var tooLong = named
        tooLong[0] = 32
        #expect(HandshakeRefusal.prologue(inPlaintext: tooLong) == nil)
        #expect(HandshakeRefusal.prologue(inPlaintext: Array(named.dropLast())) == nil)
    }
}
