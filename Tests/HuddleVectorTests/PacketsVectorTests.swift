import HuddleWire
import Testing

@testable import HuddleCrypto
@testable import HuddleProtocol

/// `packets.json`: the packet layouts of PROTOCOL.md section 2. The handshake initiation, response and cookie reply are
/// decoded with `HandshakeInitiation`, `HandshakeResponse` and `CookieReply` and re-encoded from the vector's fields;
/// transport headers with `TransportHeader`; two whole transport packets are sealed with `TransportKeypair` (the
/// engine's own sealing path) and opened again; and every datagram `PacketClassifier` must refuse throws the named
/// `WireError`.
@Suite("Vectors: packets.json")
struct PacketsVectorTests {
    static let file = "packets"
    static let handshake: CaseFilter = {
        ["initiation", "response", "cookie_reply", "handshake_refusal"].contains(try? $0.string("name"))
    }
    static let headers: CaseFilter = { ((try? $0.string("name")) ?? "").hasPrefix("transport_header_") }
    static let packets: CaseFilter = { $0.has("plaintext") }
    static let refused: CaseFilter = { $0.has("error") }
    static let classified: CaseFilter = { $0.has("packet_type") }

    @Test("Every case of packets.json is checked (23 cases)")
    func coverage() throws {
        try expectCoverage(
            of: Self.file, count: 23,
            groups: [
                ("handshake", Self.handshake), ("header", Self.headers), ("packet", Self.packets),
                ("refused", Self.refused), ("classified", Self.classified),
            ])
    }

    @Test("Handshake packets: decoded fields and encoded bytes", arguments: VectorFile.names(file, where: handshake))
    func handshakePacket(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        let fields = try vector.value("fields")
        #expect(try handshakePacketJSON(encoded) == fields)
        #expect(try hexString(encodeHandshakePacket(name, fields)) == hexString(encoded))
    }

    @Test("Transport headers: decoded fields and encoded bytes", arguments: VectorFile.names(file, where: headers))
    func transportHeader(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        let fields = try vector.value("fields")
        let header = try withBytes(encoded) { raw throws(WireError) in try TransportHeader(decoding: raw) }
        let decoded: JSON = [
            "flags": .int(header.flags.rawValue), "receiver_index": .int(header.receiverIndex.rawValue),
            "packet_number": .int(header.packetNumber.rawValue),
        ]
        #expect(decoded == fields)
        let rebuilt = TransportHeader(
            flags: TransportFlags(rawValue: UInt8(try fields.uint64("flags"))),
            receiverIndex: ReceiverIndex(UInt32(try fields.uint64("receiver_index"))),
            packetNumber: PacketNumber(try fields.uint64("packet_number")))
        #expect(try hexString(rebuilt.encoded()) == hexString(encoded))
    }

    @Test(
        "Transport packets sealed with the vector's key, and opened", arguments: VectorFile.names(file, where: packets))
    func transportPacket(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let fields = try vector.value("fields")
        let plaintext = try vector.bytes("plaintext")
        let expected = try vector.bytes("encoded")
        let key = try vector.bytes("key")
        let receiverIndex = ReceiverIndex(UInt32(try fields.uint64("receiver_index")))
        let packetNumber = try fields.uint64("packet_number")

        let sender = try keypair(sendKey: key, remoteIndex: receiverIndex)
        #expect(try hexString(seal(plaintext, with: sender, packetNumber: packetNumber)) == hexString(expected))

        var receiver = try keypair(receiveKey: key, localIndex: receiverIndex)
        #expect(try open(expected, with: &receiver).map(hexString) == hexString(plaintext))
        // The 1200-byte probe's plaintext is a PING and PADDING, as the vector says.
        if name == "transport_full_1200" {
            #expect(try decodePayload(plaintext) == [["type": "ping"], ["type": "padding", "length": 1167]])
        }
    }

    @Test("Classification refuses with the named WireError", arguments: VectorFile.names(file, where: refused))
    func classifyRefused(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let expected = try vector.string("error")
        do {
            let type = try PacketClassifier.classify(try vector.bytes("encoded"))
            Issue.record("\(name) was classified as \(type)")
        } catch let error as WireError {
            #expect(error.vectorName == expected, "\(name): Swift threw \(error)")
        }
    }

    @Test("Classification accepts", arguments: VectorFile.names(file, where: classified))
    func classifyAccepted(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let type = try PacketClassifier.classify(try vector.bytes("encoded"))
        #expect(UInt64(type.rawValue) == (try vector.uint64("packet_type")))
    }
}

// MARK: - Handshake packets in the vector schema

/// A handshake packet (initiation, response or cookie reply) decoded by Swift, in the vector files' field names.
func handshakePacketJSON(_ packet: [UInt8]) throws -> JSON {
    switch packet.first {
    case PacketType.handshakeInitiation.rawValue:
        let initiation = try HandshakeInitiation(decoding: packet)
        return [
            "sender_index": .int(initiation.senderIndex.rawValue), "ephemeral": .hex(initiation.ephemeral),
            "encrypted_static": .hex(initiation.encryptedStatic),
            "encrypted_payload": .hex(initiation.encryptedPayload), "mac1": .hex(initiation.mac1),
            "mac2": .hex(initiation.mac2),
        ]
    case PacketType.handshakeResponse.rawValue:
        let response = try HandshakeResponse(decoding: packet)
        return [
            "sender_index": .int(response.senderIndex.rawValue),
            "receiver_index": .int(response.receiverIndex.rawValue),
            "ephemeral": .hex(response.ephemeral), "encrypted_nothing": .hex(response.encryptedNothing),
            "mac1": .hex(response.mac1), "mac2": .hex(response.mac2),
        ]
    case PacketType.handshakeRefusal.rawValue:
        let refusal = try HandshakeRefusal(decoding: packet)
        return [
            "receiver_index": .int(refusal.receiverIndex.rawValue), "nonce": .hex(refusal.nonce),
            "encrypted_prologue": .hex(refusal.encryptedPrologue),
        ]
    default:
        let reply = try CookieReply(decoding: packet)
        return [
            "receiver_index": .int(reply.receiverIndex.rawValue), "nonce": .hex(reply.nonce),
            "encrypted_cookie": .hex(reply.encryptedCookie),
        ]
    }
}

/// Encodes the handshake packet `kind` ("initiation", "response", "cookie_reply" or "handshake_refusal") from its
/// vector fields.
func encodeHandshakePacket(_ kind: String, _ fields: JSON) throws -> [UInt8] {
    func index(_ key: String) throws -> ReceiverIndex { ReceiverIndex(UInt32(try fields.uint64(key))) }
    switch kind {
    case "initiation":
        return try HandshakeInitiation(
            senderIndex: index("sender_index"), ephemeral: fields.bytes("ephemeral"),
            encryptedStatic: fields.bytes("encrypted_static"), encryptedPayload: fields.bytes("encrypted_payload"),
            mac1: fields.bytes("mac1"), mac2: fields.bytes("mac2")
        ).encoded()
    case "response":
        return try HandshakeResponse(
            senderIndex: index("sender_index"), receiverIndex: index("receiver_index"),
            ephemeral: fields.bytes("ephemeral"), encryptedNothing: fields.bytes("encrypted_nothing"),
            mac1: fields.bytes("mac1"), mac2: fields.bytes("mac2")
        ).encoded()
    case "handshake_refusal":
        return try HandshakeRefusal(
            receiverIndex: index("receiver_index"), nonce: fields.bytes("nonce"),
            encryptedPrologue: fields.bytes("encrypted_prologue")
        ).encoded()
    default:
        return try CookieReply(
            receiverIndex: index("receiver_index"), nonce: fields.bytes("nonce"),
            encryptedCookie: fields.bytes("encrypted_cookie")
        ).encoded()
    }
}

// MARK: - Transport sealing through TransportKeypair

/// A keypair that sends with `sendKey` to `remoteIndex` (its receive key is unused and random).
func keypair(sendKey: [UInt8], remoteIndex: ReceiverIndex) throws -> TransportKeypair {
    try keypair(
        sending: sendKey, receiving: [UInt8](repeating: 0xEE, count: 32), local: ReceiverIndex(0), remote: remoteIndex)
}

/// A keypair that receives with `receiveKey` at `localIndex`.
func keypair(receiveKey: [UInt8], localIndex: ReceiverIndex) throws -> TransportKeypair {
    try keypair(
        sending: [UInt8](repeating: 0xEE, count: 32), receiving: receiveKey, local: localIndex, remote: ReceiverIndex(0)
    )
}

/// A `TransportKeypair` as a completed handshake would make it, from raw keys.
func keypair(
    sending: [UInt8], receiving: [UInt8], local: ReceiverIndex, remote: ReceiverIndex
) throws
    -> TransportKeypair
{
    let keys = NoiseHandshake.TransportKeys(
        sending: CipherState(key: try SymmetricKey(bytes: sending)),
        receiving: CipherState(key: try SymmetricKey(bytes: receiving)), handshakeHash: [], remoteStaticKey: nil)
    return try TransportKeypair(keys: keys, localIndex: local, remoteIndex: remote, isInitiator: true, created: .zero)
}

/// The datagram `keypair` seals `plaintext` into as packet `packetNumber` (flags 0).
func seal(_ plaintext: [UInt8], with keypair: TransportKeypair, packetNumber: UInt64) throws -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: TransportHeader.minimumPacketLength + plaintext.count)
    buffer.replaceSubrange(
        TransportHeader.encodedLength..<(TransportHeader.encodedLength + plaintext.count), with: plaintext)
    let length = try buffer.withUnsafeMutableBytes { raw in
        try keypair.seal(raw, payloadLength: plaintext.count, packetNumber: packetNumber)
    }
    return Array(buffer.prefix(length))
}

/// The plaintext `keypair` opens `datagram` to, or `nil` if it refuses it.
func open(_ datagram: [UInt8], with keypair: inout TransportKeypair) throws -> [UInt8]? {
    var buffer = datagram
    let header = try withBytes(datagram) { raw throws(WireError) in try TransportPacket(decoding: raw).header }
    let range = buffer.withUnsafeMutableBytes { raw in
        keypair.open(raw, header: header, failureLimit: ProtocolLimits.maxAuthenticationFailuresPerKeypair)
    }
    return range.map { Array(buffer[$0]) }
}
