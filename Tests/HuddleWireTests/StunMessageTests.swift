import HuddleWire
import Testing

/// RFC 5769's sample request (2.1): a Binding request with SOFTWARE, PRIORITY, ICE-CONTROLLED, USERNAME
/// ("evtj:h6vY"), MESSAGE-INTEGRITY (password "VOkJxbRl1RmTxUk/WvJxBt") and FINGERPRINT.
let rfc5769Request = stunHex(
    "000100582112a442b7e7a701bc34d686fa87dfae802200105354554e207465737420636c69656e74002400046e0001ff"
        + "80290008932ff9b151263b36000600096576746a3a68367659202020000800149aeaa70cbfd8cb56781ef2b5b2d3f2"
        + "49c1b571a280280004e57a3bcf")
/// RFC 5769's sample IPv4 response (2.2): XOR-MAPPED-ADDRESS 192.0.2.1:32853, integrity under the same password.
let rfc5769Response = stunHex(
    "0101003c2112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220002000080001a147e112a643"
        + "000800142b91f599fd9e90c38c7489f92af9ba53f06be7d780280004c07d4c96")

func stunHex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    return stride(from: 0, to: digits.count, by: 2).map {
        UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
    }
}

@Suite("STUN messages and ChannelData")
struct StunMessageTests {
    @Test("RFC 5769 2.1: the sample request decodes, its FINGERPRINT checks, and what MESSAGE-INTEGRITY covers is kept")
    func sampleRequest() throws {
        let message = try StunMessage(decoding: rfc5769Request)
        #expect(message.method == .binding)
        #expect(message.messageClass == .request)
        #expect(message.transactionID == stunHex("b7e7a701bc34d686fa87dfae"))
        #expect(message.attributes.map(\.type) == [StunAttribute.software, 0x0024, 0x8029, StunAttribute.username])
        #expect(message.attribute(StunAttribute.software)?.text == "STUN test client")
        #expect(message.attribute(StunAttribute.username)?.text == "evtj:h6vY")
        let integrity = try #require(message.integrity)
        // The bytes before MESSAGE-INTEGRITY, with the length counting through it (0x50) instead of the whole (0x58).
        var covered = Array(rfc5769Request[0..<76])
        covered[3] = 0x50
        #expect(integrity.covered == covered)
        #expect(integrity.tag == Array(rfc5769Request[80..<100]))
    }

    @Test("RFC 5769 2.2: XOR-MAPPED-ADDRESS reads as 192.0.2.1:32853, and encodes back to the same bytes")
    func sampleResponse() throws {
        let message = try StunMessage(decoding: rfc5769Response)
        #expect(message.method == .binding)
        #expect(message.messageClass == .success)
        let mapped = try #require(message.attribute(StunAttribute.xorMappedAddress))
        let address = try mapped.xorAddress(transactionID: message.transactionID)
        #expect(address == (try WireAddress(family: 4, bytes: [192, 0, 2, 1], port: 32853)))
        let encoded = StunAttribute.xorAddress(
            StunAttribute.xorMappedAddress, address, transactionID: message.transactionID)
        #expect(encoded.value == Array(rfc5769Response[40..<48]))
    }

    @Test("A changed byte fails the FINGERPRINT; broken headers and attributes are typed errors, never a crash")
    func hostileBytes() {
        var flipped = rfc5769Response
        flipped[30] ^= 1
        #expect(throws: StunError.fingerprintMismatch) { try StunMessage(decoding: flipped) }
        var noCookie = rfc5769Response
        noCookie[4] = 0
        #expect(throws: StunError.notStun) { try StunMessage(decoding: noCookie) }
        #expect(throws: StunError.truncated) { try StunMessage(decoding: Array(rfc5769Response[0..<19])) }
        #expect(throws: StunError.lengthMismatch(declared: 60, actual: 56)) {
            try StunMessage(decoding: Array(rfc5769Response[0..<76]))
        }
        // An attribute whose length runs past the message.
        var overrun = Array(rfc5769Response[0..<48])
        overrun[3] = 28
        overrun[39] = 0xFF
        #expect(throws: StunError.truncated) { try StunMessage(decoding: overrun) }
        // An IPv4 family with an IPv6-sized value.
        let bad = StunAttribute(
            type: StunAttribute.xorPeerAddress, value: [0, 1, 0, 0] + [UInt8](repeating: 0, count: 16))
        #expect(throws: StunError.malformedAttribute(type: StunAttribute.xorPeerAddress)) {
            try bad.xorAddress(transactionID: [UInt8](repeating: 0, count: 12))
        }
        for length in 0..<60 {
            let prefix = Array(rfc5769Request.prefix(length))
            #expect(throws: StunError.self) { try StunMessage(decoding: prefix) }
        }
    }

    @Test("Message types interleave method and class bits as RFC 8489 5 draws them")
    func messageTypes() throws {
        let cases: [(StunMethod, StunClass, UInt16)] = [
            (.binding, .request, 0x0001), (.binding, .success, 0x0101), (.allocate, .request, 0x0003),
            (.allocate, .success, 0x0103), (.allocate, .error, 0x0113), (.refresh, .request, 0x0004),
            (.send, .indication, 0x0016), (.data, .indication, 0x0017), (.createPermission, .request, 0x0008),
            (.channelBind, .success, 0x0109), (StunMethod(rawValue: 0xFFF), .error, 0x3FFF),
        ]
        for (method, messageClass, type) in cases {
            let bytes = StunMessage(method: method, messageClass: messageClass, transactionID: Array(0..<12))
                .encoded()
            #expect(UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == type, "\(method) \(messageClass)")
            let decoded = try StunMessage(decoding: bytes)
            #expect(decoded.method == method && decoded.messageClass == messageClass)
        }
    }

    @Test("Attributes of every length round-trip with their padding; integrity and fingerprint are appended in order")
    func roundTrip() throws {
        let transactionID: [UInt8] = Array(100..<112)
        let peer = try WireAddress(family: 6, bytes: Array(0..<16), port: 3478)
        var attributes = (0..<6).map { StunAttribute(type: 0x8000 + UInt16($0), value: Array(repeating: 7, count: $0)) }
        attributes.append(.xorAddress(StunAttribute.xorPeerAddress, peer, transactionID: transactionID))
        attributes.append(.uint32(StunAttribute.lifetime, 600))
        attributes.append(.error(code: 438, reason: "Stale Nonce"))
        let message = StunMessage(
            method: .allocate, messageClass: .request, transactionID: transactionID, attributes: attributes)
        var given: [UInt8] = []
        let bytes = message.encoded(
            integrity: { covered in
                given = covered; return Array(repeating: 0xAB, count: 20)
            },
            fingerprint: true)
        #expect(bytes.count % 4 == 0)
        let decoded = try StunMessage(decoding: bytes)
        #expect(decoded.attributes == attributes)
        #expect(decoded.integrity?.covered == given)
        #expect(decoded.integrity?.tag == Array(repeating: 0xAB, count: 20))
        #expect(try decoded.attribute(StunAttribute.xorPeerAddress)?.xorAddress(transactionID: transactionID) == peer)
        #expect(try decoded.attribute(StunAttribute.lifetime)?.uint32() == 600)
        let error = try #require(try decoded.attribute(StunAttribute.errorCode)?.errorCode())
        #expect(error.code == 438 && error.reason == "Stale Nonce")
        bytes.withUnsafeBytes {
            #expect(StunMessage.isStun($0))
            #expect(!ChannelData.isChannelData($0))
        }
    }

    @Test("ChannelData: header written and parsed, padding ignored, numbers outside 0x4000-0x4FFF refused")
    func channelData() throws {
        var datagram = [UInt8](repeating: 0, count: 4 + 5 + 3)
        datagram.withUnsafeMutableBytes { ChannelData.writeHeader(channel: 0x4001, length: 5, into: $0) }
        #expect(Array(datagram[0..<4]) == [0x40, 0x01, 0x00, 0x05])
        try datagram.withUnsafeBytes { raw in
            #expect(ChannelData.isChannelData(raw))
            #expect(!StunMessage.isStun(raw))
            let parsed = try ChannelData.parse(raw)
            #expect(parsed.channel == 0x4001 && parsed.data == 4..<9)
        }
        let tooLong: [UInt8] = [0x40, 0x01, 0x00, 0x09, 1, 2]
        #expect(throws: StunError.truncated) { try tooLong.withUnsafeBytes { try ChannelData.parse($0) } }
        let reserved: [UInt8] = [0x50, 0x00, 0x00, 0x00]
        #expect(throws: StunError.invalidChannelNumber(0x5000)) {
            try reserved.withUnsafeBytes { try ChannelData.parse($0) }
        }
    }

    @Test("CRC-32 is zlib's")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }
}
