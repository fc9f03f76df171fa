import HuddleWire
import Testing

@testable import Huddle
@testable import HuddleCrypto
@testable import HuddleProtocol
@testable import HuddleSession

/// `handshake.json`: Noise IKpsk2 as Huddle runs it (PROTOCOL.md sections 2.1-2.4 and 7). The cacophony vector goes
/// through `NoiseHandshake`; the member, rekey and joiner handshakes go through `HandshakeMessages` (the functions the
/// endpoint calls) with the vector's ephemeral keys fed in as "randomness": initiation and response bytes (mac1
/// included), the responder's view of the initiation, split keys, handshake hash, and the first transport packets
/// sealed by `TransportKeypair`. The chaining key and hash after every Noise token are private to `NoiseHandshake`;
/// they are checked by replaying the pattern's tokens on Swift's `SymmetricState` (the same HKDF, hash and AEAD),
/// and `NoiseHandshake`'s own hash after each message is compared where it is public. Then the cookie reply and the
/// resent initiation with mac2 (`CookieJar`, `MacAuthenticator`, `HandshakeMessages.restamp`) and TAI64N.
@Suite("Vectors: handshake.json")
struct HandshakeVectorTests {
    static let file = "handshake"
    static let timestamps: CaseFilter = { ((try? $0.string("name")) ?? "").hasPrefix("tai64n_") }

    @Test("Every case of handshake.json is checked (9 cases)")
    func coverage() throws {
        let named: (String) -> CaseFilter = { name in { (try? $0.string("name")) == name } }
        try expectCoverage(
            of: Self.file, count: 9,
            groups: [
                ("cacophony", named("cacophony_ikpsk2_sha256")), ("member", named("member_handshake")),
                ("cookie", named("cookie_reply")), ("rekey", named("rekey_handshake")),
                ("joiner", named("joiner_handshake")), ("refused", named("handshake_refused")),
                ("tai64n", Self.timestamps),
            ])
    }

    @Test("The cacophony IKpsk2 vector through NoiseHandshake")
    func cacophony() throws {
        let vector = try VectorFile.load(Self.file)("cacophony_ikpsk2_sha256")
        let prologue = try vector.bytes("prologue")
        let psk = SecureBytes(try vector.bytes("psk"))
        let responderStatic = try X25519PrivateKey(secretBytes: try vector.bytes("responder_static_private"))
        let initiator = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .initiator, prologue: prologue,
                staticKey: try X25519PrivateKey(secretBytes: try vector.bytes("initiator_static_private")),
                remoteStaticKey: responderStatic.publicKey, presharedKeys: [psk]),
            ephemeralKey: try X25519PrivateKey(secretBytes: try vector.bytes("initiator_ephemeral_private")))
        let responder = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .responder, prologue: prologue, staticKey: responderStatic,
                presharedKeys: [psk]),
            ephemeralKey: try X25519PrivateKey(secretBytes: try vector.bytes("responder_ephemeral_private")))
        let message1 = try initiator.writeMessage(payload: try vector.bytes("payload1"))
        #expect(try hexString(message1) == vector.string("message1"))
        #expect(try hexString(responder.readMessage(message1)) == vector.string("payload1"))
        let message2 = try responder.writeMessage(payload: try vector.bytes("payload2"))
        #expect(try hexString(message2) == vector.string("message2"))
        #expect(try hexString(initiator.readMessage(message2)) == vector.string("payload2"))
        #expect(try hexString(responder.handshakeHash) == vector.string("handshake_hash"))
        #expect(try hexString(initiator.handshakeHash) == vector.string("handshake_hash"))
    }

    @Test("A member handshake: every Noise step, both packets, the keys and the first transport packets")
    func memberHandshake() throws {
        let vector = try VectorFile.load(Self.file)("member_handshake")
        let initiatorJSON = try vector.value("initiator")
        let responderJSON = try vector.value("responder")
        let timestamp = try vector.value("timestamp")

        // Constants the wire depends on.
        #expect(HandshakeMessages.pattern.protocolName(hash: .sha256) == (try vector.string("protocol_name")))
        #expect(try hexString(HuddleNode.prologue) == vector.string("prologue"))
        let tai = TAI64N(
            seconds: try timestamp.uint64("seconds"), nanoseconds: UInt32(try timestamp.uint64("nanoseconds")))
        #expect(try hexString(tai.bytes) == timestamp.string("tai64n"))
        // The credentials are the session secret's (kdf.json session_credentials).
        let session = try VectorFile.load("kdf")("session_credentials")
        #expect(try vector.string("psk") == session.string("psk"))
        #expect(try vector.string("mac_secret") == session.string("mac_secret"))

        let run = try HandshakeRun(vector: vector, initiator: initiatorJSON, responder: responderJSON)
        #expect(try hexString(run.initiatorStatic.publicKey.bytes) == initiatorJSON.string("static_key"))
        #expect(try hexString(run.responderStatic.publicKey.bytes) == responderJSON.string("static_key"))
        try run.expectPackets(vector)
        try run.expectKeys(vector)

        // The packets' fields, as the responder and the initiator decode them.
        #expect(try handshakePacketJSON(run.initiation) == vector.value("initiation_fields"))
        #expect(try handshakePacketJSON(run.response) == vector.value("response_fields"))
        // mac1 keys (each keyed for the message's receiver), and mac1 verifies where it arrives.
        #expect(try hexString(run.initiationAuthenticator.mac1Key.bytes) == vector.string("initiation_mac1_key"))
        #expect(try hexString(run.responseAuthenticator.mac1Key.bytes) == vector.string("response_mac1_key"))
        #expect(run.initiationAuthenticator.hasValidMac1(run.initiation, mac1Offset: HandshakeInitiation.mac1Offset))
        #expect(run.responseAuthenticator.hasValidMac1(run.response, mac1Offset: HandshakeResponse.mac1Offset))

        // Message 1's payload (TAI64N || resumption index) as the responder decrypts it, and as readInitiation
        // reads it.
        #expect(try hexString(run.initiationPayload) == vector.string("initiation_payload"))
        #expect(run.received.timestamp == tai)
        #expect(run.received.resumption == nil)
        #expect(try vector.uint64("resumption_index") == 0)
        #expect(run.received.initiatorStatic == run.initiatorStatic.publicKey)
        #expect(try run.received.senderIndex.rawValue == UInt32(initiatorJSON.uint64("sender_index")))

        // h and ck after every token, replayed on SymmetricState; the public hash after each message.
        let steps = try vector.array("noise_steps")
        let replayed = try replayNoiseSteps(
            prologue: HuddleNode.prologue, initiatorStatic: run.initiatorStatic,
            initiatorEphemeral: run.initiatorEphemeral,
            responderStatic: run.responderStatic, responderEphemeral: run.responderEphemeral,
            psk: SecureBytes(try vector.bytes("psk")), payload: run.initiationPayload)
        #expect(replayed.steps == steps)
        #expect(hexString(replayed.message1) == hexString(run.initiation[8..<HandshakeInitiation.mac1Offset]))
        #expect(hexString(replayed.message2) == hexString(run.response[12..<HandshakeResponse.mac1Offset]))
        #expect(try hexString(run.hashAfterMessage1) == step("message1.payload", in: steps).string("h"))
        #expect(try hexString(run.initiatorKeys.handshakeHash) == step("message2.payload", in: steps).string("h"))

        // Each side's first transport packet, sealed by TransportKeypair with the split keys.
        let first = try vector.value("first_transport_packet")
        try run.expectTransportPacket(first, fromInitiator: true)
        #expect(try hexString(first.bytes("packet").prefix(16)) == first.string("header"))
        let nonce = ChaChaPoly.Nonce(counter: try first.uint64("packet_number"))
        #expect(
            try nonce.withUnsafeNoncePointer { hexString(UnsafeBufferPointer(start: $0, count: 12)) }
                == first.string("nonce"))
        try run.expectTransportPacket(try vector.value("responder_first_packet"), fromInitiator: false)

        // The first packet carries the initiator's MEMBER_JOINED (control.json's record_alice) as message 0 of
        // channel 1.
        let frames = try first.array("frames")
        let data = try frames[0].bytes("data")
        let record = try VectorFile.load("control")("record_alice")
        let joined = try MembershipMessage(decoding: data)
        guard case .memberJoined(let member) = joined else {
            Issue.record("the first packet's message is \(joined), not MEMBER_JOINED")
            return
        }
        #expect(try memberRecordJSON(member) == record.value("record"))
        #expect(hexString(joined.encoded()) == hexString(data))
    }

    @Test("A cookie reply under load, and the initiation resent with mac2")
    func cookieReply() throws {
        let vector = try VectorFile.load(Self.file)("cookie_reply")
        let member = try VectorFile.load(Self.file)("member_handshake")
        let run = try HandshakeRun(
            vector: member, initiator: try member.value("initiator"), responder: try member.value("responder"))
        let source = try networkAddress(try vector.value("source_address"))
        #expect(try hexString(source.canonicalBytes) == vector.string("cookie_input"))

        // The responder (Bob) makes the cookie from its secret and Alice's address, and seals it.
        var random = FixedBytes(try vector.bytes("cookie_secret"))
        var jar = CookieJar()
        let cookie = jar.cookie(forAddress: source.canonicalBytes, now: .zero, using: &random)
        #expect(!random.overdrawn && random.isEmpty)
        #expect(try hexString(cookie) == vector.string("cookie"))
        let bobAuthenticator = run.initiationAuthenticator
        #expect(try hexString(bobAuthenticator.cookieKey.secret.bytes) == vector.string("cookie_key"))
        let mac1 = run.initiation[HandshakeInitiation.mac1Offset..<HandshakeInitiation.mac2Offset]
        #expect(try hexString(mac1) == vector.string("associated_data"))
        let nonce = try vector.bytes("nonce")
        let sealed = try bobAuthenticator.sealCookie(cookie, nonce: nonce, answeringMac1: mac1)
        let reply = try CookieReply(receiverIndex: run.received.senderIndex, nonce: nonce, encryptedCookie: sealed)
            .encoded()
        #expect(try hexString(reply) == vector.string("cookie_reply"))
        #expect(try handshakePacketJSON(reply) == vector.value("cookie_reply_fields"))

        // Alice opens it (her authenticator is keyed for Bob, the initiation's receiver) and resends with mac2.
        let decoded = try CookieReply(decoding: try vector.bytes("cookie_reply"))
        let opened = try run.initiationAuthenticator.openCookie(
            decoded.encryptedCookie, nonce: decoded.nonce, answeringMac1: mac1)
        #expect(hexString(opened) == hexString(cookie))
        let resent = try HandshakeMessages.restamp(
            run.initiationState, authenticator: run.initiationAuthenticator, cookie: opened)
        #expect(try hexString(resent.datagram) == vector.string("initiation_with_mac2"))
        #expect(try hexString(resent.datagram[HandshakeInitiation.mac2Offset...]) == vector.string("mac2"))
        #expect(
            MacAuthenticator.hasValidMac2(resent.datagram, mac2Offset: HandshakeInitiation.mac2Offset, cookie: cookie))
        #expect(bobAuthenticator.hasValidMac1(resent.datagram, mac1Offset: HandshakeInitiation.mac1Offset))
    }

    @Test("A huddle/2 initiation refused by a huddle/1 responder, and the refusal read by its initiator")
    func handshakeRefused() throws {
        let vector = try VectorFile.load(Self.file)("handshake_refused")
        let bob = try VectorFile.load(Self.file)("member_handshake").value("responder")
        let bobStatic = try X25519PrivateKey(secretBytes: try bob.bytes("static_private"))
        #expect(try hexString(HuddleNode.prologue) == vector.string("responder_prologue"))
        let initiation = try vector.bytes("initiation")
        let layout = try HandshakeInitiation(decoding: initiation)
        #expect(layout.senderIndex.rawValue == UInt32(try vector.uint64("initiator_sender_index")))

        // Bob: the mac1 verifies under the members' credentials, Noise message 1 does not read under huddle/1.
        let macSecret = SecureBytes(try vector.bytes("mac_secret"))
        let bobAuthenticator = try MacAuthenticator(macSecret: macSecret, receiverStatic: bobStatic.publicKey)
        #expect(bobAuthenticator.hasValidMac1(initiation, mac1Offset: HandshakeInitiation.mac1Offset))
        var random = ChaChaRandomGenerator(seed: 1)
        #expect(throws: (any Error).self) {
            try HandshakeMessages.readInitiation(
                layout, localStatic: bobStatic, prologue: HuddleNode.prologue, using: &random)
        }
        // Bob seals his prologue under his cookie key, bound to the refusal's header and the initiation's mac1.
        #expect(try hexString(bobAuthenticator.cookieKey.secret.bytes) == vector.string("cookie_key"))
        let plaintext = try #require(HandshakeRefusal.plaintext(naming: HuddleNode.prologue))
        #expect(try hexString(plaintext) == vector.string("plaintext"))
        let header = HandshakeRefusal.header(receiverIndex: layout.senderIndex)
        #expect(try hexString(header + layout.mac1) == vector.string("associated_data"))
        let nonce = try vector.bytes("nonce")
        let sealed = try bobAuthenticator.sealRefusal(
            plaintext, nonce: nonce, header: header, answeringMac1: layout.mac1)
        let refusal = try HandshakeRefusal(receiverIndex: layout.senderIndex, nonce: nonce, encryptedPrologue: sealed)
            .encoded()
        #expect(try hexString(refusal) == vector.string("refusal"))
        #expect(try handshakePacketJSON(refusal) == vector.value("refusal_fields"))

        // Alice (the huddle/2 side) opens it with the cookie key she derives for Bob and reads his prologue.
        let decoded = try HandshakeRefusal(decoding: try vector.bytes("refusal"))
        let opened = try bobAuthenticator.openRefusal(
            decoded.encryptedPrologue, nonce: decoded.nonce, header: decoded.header, answeringMac1: layout.mac1)
        #expect(HandshakeRefusal.prologue(inPlaintext: opened) == HuddleNode.prologue)
        #expect(try hexString(Array("huddle/2".utf8)) == vector.string("initiator_prologue"))
    }

    /// One side of a handshake for ``HandshakeRun``: `staticPrivate`, and the ephemeral key and sender index that
    /// `vector` gives for `role` ("initiator" or "responder").
    static func party(_ role: String, staticPrivate: JSON, in vector: JSON) throws -> JSON {
        [
            "static_private": staticPrivate, "ephemeral_private": try vector.value("\(role)_ephemeral_private"),
            "sender_index": try vector.value("\(role)_sender_index"),
        ]
    }

    @Test("A rekey: the resumption index in message 1, packet numbers continuing under the new keys")
    func rekey() throws {
        let vector = try VectorFile.load(Self.file)("rekey_handshake")
        let member = try VectorFile.load(Self.file)("member_handshake")
        let initiator = try Self.party(
            "initiator", staticPrivate: try member.value("initiator").value("static_private"), in: vector)
        let responder = try Self.party(
            "responder", staticPrivate: try member.value("responder").value("static_private"), in: vector)
        // Same credentials as the member handshake (the vector does not repeat them).
        let credentials: JSON = [
            "psk": try member.value("psk"), "mac_secret": try member.value("mac_secret"),
            "timestamp": try vector.value("timestamp"), "resumption_index": try vector.value("resumption_index"),
        ]
        let run = try HandshakeRun(vector: credentials, initiator: initiator, responder: responder)
        try run.expectPackets(vector)
        try run.expectKeys(vector)
        #expect(try hexString(run.initiationPayload) == vector.string("initiation_payload"))
        #expect(try run.received.resumption?.rawValue == UInt32(vector.uint64("resumption_index")))
        let replayed = try replayNoiseSteps(
            prologue: HuddleNode.prologue, initiatorStatic: run.initiatorStatic,
            initiatorEphemeral: run.initiatorEphemeral,
            responderStatic: run.responderStatic, responderEphemeral: run.responderEphemeral,
            psk: SecureBytes(try member.bytes("psk")), payload: run.initiationPayload)
        #expect(try replayed.steps == vector.array("noise_steps"))
        try run.expectTransportPacket(try vector.value("first_transport_packet"), fromInitiator: true)
    }

    @Test("A joiner's handshake under the invitation's credentials")
    func joiner() throws {
        let vector = try VectorFile.load(Self.file)("joiner_handshake")
        let member = try VectorFile.load(Self.file)("member_handshake")
        let invitation = try VectorFile.load("kdf")("invitation_credentials")
        #expect(try vector.string("psk") == invitation.string("psk"))
        #expect(try vector.string("mac_secret") == invitation.string("mac_secret"))
        let initiator = try Self.party(
            "initiator", staticPrivate: try vector.value("initiator_static_private"), in: vector)
        let responder = try Self.party(
            "responder", staticPrivate: try member.value("responder").value("static_private"), in: vector)
        let run = try HandshakeRun(vector: vector, initiator: initiator, responder: responder)
        #expect(try hexString(run.initiatorStatic.publicKey.bytes) == vector.string("initiator_static_key"))
        // The joiner targets a member the ticket names: the responder whose key the vector states.
        #expect(try hexString(run.responderStatic.publicKey.bytes) == vector.string("responder_static_key"))
        #expect(run.received.initiatorStatic == run.initiatorStatic.publicKey)
        try run.expectPackets(vector)
        try run.expectKeys(vector)
    }

    @Test("TAI64N: 2^62 + seconds, then nanoseconds, big-endian", arguments: VectorFile.names(file, where: timestamps))
    func tai64n(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let value = TAI64N(seconds: try vector.uint64("seconds"), nanoseconds: UInt32(try vector.uint64("nanoseconds")))
        #expect(try hexString(value.bytes) == vector.string("encoded"))
        let decoded = try #require(TAI64N(bytes: try vector.bytes("encoded")))
        #expect(decoded == value)
    }
}

// MARK: - One handshake through HandshakeMessages

/// Both sides of one handshake, run by `HandshakeMessages` with the vector's keys, indices and time.
struct HandshakeRun {
    let initiatorStatic: X25519PrivateKey
    let initiatorEphemeral: X25519PrivateKey
    let responderStatic: X25519PrivateKey
    let responderEphemeral: X25519PrivateKey
    /// mac1 of the initiation, keyed for the responder's static key (the responder checks with the same one).
    let initiationAuthenticator: MacAuthenticator
    /// mac1 of the response, keyed for the initiator's static key.
    let responseAuthenticator: MacAuthenticator
    let initiationState: HandshakeMessages.Initiation
    let initiation: [UInt8]
    let received: HandshakeMessages.ReceivedInitiation
    let initiationPayload: [UInt8]
    let hashAfterMessage1: [UInt8]
    let response: [UInt8]
    let initiatorKeys: NoiseHandshake.TransportKeys
    let responderKeys: NoiseHandshake.TransportKeys
    let initiatorIndex: ReceiverIndex
    let responderIndex: ReceiverIndex

    /// `vector` gives psk, mac_secret, timestamp and resumption_index; `initiator` and `responder` their
    /// static_private, ephemeral_private and sender_index.
    init(vector: JSON, initiator: JSON, responder: JSON) throws {
        initiatorStatic = try X25519PrivateKey(secretBytes: try initiator.bytes("static_private"))
        initiatorEphemeral = try X25519PrivateKey(secretBytes: try initiator.bytes("ephemeral_private"))
        responderStatic = try X25519PrivateKey(secretBytes: try responder.bytes("static_private"))
        responderEphemeral = try X25519PrivateKey(secretBytes: try responder.bytes("ephemeral_private"))
        initiatorIndex = ReceiverIndex(UInt32(try initiator.uint64("sender_index")))
        responderIndex = ReceiverIndex(UInt32(try responder.uint64("sender_index")))
        let psk = SecureBytes(try vector.bytes("psk"))
        let macSecret = SecureBytes(try vector.bytes("mac_secret"))
        let time = try vector.value("timestamp")
        let timestamp = TAI64N(seconds: try time.uint64("seconds"), nanoseconds: UInt32(try time.uint64("nanoseconds")))
        let resumption = try vector.uint64("resumption_index")

        initiationAuthenticator = try MacAuthenticator(macSecret: macSecret, receiverStatic: responderStatic.publicKey)
        responseAuthenticator = try MacAuthenticator(macSecret: macSecret, receiverStatic: initiatorStatic.publicKey)

        var initiatorRandom = FixedBytes(try initiator.bytes("ephemeral_private"))
        initiationState = try HandshakeMessages.makeInitiation(
            localStatic: initiatorStatic, remoteStatic: responderStatic.publicKey, presharedKey: psk,
            prologue: HuddleNode.prologue, senderIndex: initiatorIndex, timestamp: timestamp,
            resumption: resumption == 0 ? nil : ReceiverIndex(UInt32(resumption)),
            authenticator: initiationAuthenticator,
            cookie: nil, using: &initiatorRandom)
        initiation = initiationState.datagram
        hashAfterMessage1 = initiationState.noise.handshakeHash

        // The raw payload of message 1, read by a bare NoiseHandshake responder.
        let probe = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .responder, prologue: HuddleNode.prologue, staticKey: responderStatic),
            ephemeralKey: responderEphemeral)
        initiationPayload = try probe.readMessage(Array(initiation[8..<HandshakeInitiation.mac1Offset]))

        var responderRandom = FixedBytes(try responder.bytes("ephemeral_private"))
        received = try HandshakeMessages.readInitiation(
            try HandshakeInitiation(decoding: initiation), localStatic: responderStatic, prologue: HuddleNode.prologue,
            using: &responderRandom)
        let made = try HandshakeMessages.makeResponse(
            to: received, presharedKey: psk, senderIndex: responderIndex, authenticator: responseAuthenticator,
            cookie: nil)
        responderKeys = made.keys
        response = made.datagram
        initiatorKeys = try HandshakeMessages.readResponse(
            try HandshakeResponse(decoding: response), for: initiationState)
        #expect(!initiatorRandom.overdrawn && initiatorRandom.isEmpty, "the initiator drew other randomness")
        #expect(!responderRandom.overdrawn && responderRandom.isEmpty, "the responder drew other randomness")
    }

    /// The initiation and response bytes and the final handshake hash.
    func expectPackets(_ vector: JSON, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try hexString(initiation) == vector.string("initiation"), sourceLocation: sourceLocation)
        #expect(try hexString(response) == vector.string("response"), sourceLocation: sourceLocation)
        #expect(
            try hexString(initiatorKeys.handshakeHash) == vector.string("handshake_hash"),
            sourceLocation: sourceLocation)
        #expect(
            try hexString(responderKeys.handshakeHash) == vector.string("handshake_hash"),
            sourceLocation: sourceLocation)
    }

    /// The split keys, from both sides.
    func expectKeys(_ vector: JSON, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let keys = try vector.value("transport_keys")
        let forward = try keys.string("initiator_to_responder")
        let backward = try keys.string("responder_to_initiator")
        #expect(initiatorKeys.sending.key.map { hexString($0.secret.bytes) } == forward, sourceLocation: sourceLocation)
        #expect(
            responderKeys.receiving.key.map { hexString($0.secret.bytes) } == forward, sourceLocation: sourceLocation)
        #expect(
            responderKeys.sending.key.map { hexString($0.secret.bytes) } == backward, sourceLocation: sourceLocation)
        #expect(
            initiatorKeys.receiving.key.map { hexString($0.secret.bytes) } == backward, sourceLocation: sourceLocation)
    }

    /// Seals the packet's frames with the sender's `TransportKeypair` and opens it with the receiver's.
    func expectTransportPacket(
        _ packet: JSON, fromInitiator: Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let sender = try TransportKeypair(
            keys: fromInitiator ? initiatorKeys : responderKeys,
            localIndex: fromInitiator ? initiatorIndex : responderIndex,
            remoteIndex: fromInitiator ? responderIndex : initiatorIndex, isInitiator: fromInitiator, created: .zero)
        var receiver = try TransportKeypair(
            keys: fromInitiator ? responderKeys : initiatorKeys,
            localIndex: fromInitiator ? responderIndex : initiatorIndex,
            remoteIndex: fromInitiator ? initiatorIndex : responderIndex, isInitiator: !fromInitiator, created: .zero)
        #expect(
            try UInt64(sender.remoteIndex.rawValue) == packet.uint64("receiver_index"), sourceLocation: sourceLocation)
        if packet.has("flags") { #expect(try packet.uint64("flags") == 0, sourceLocation: sourceLocation) }
        let plaintext = try encodePayload(try packet.array("frames"))
        if packet.has("plaintext") {
            #expect(try hexString(plaintext) == packet.string("plaintext"), sourceLocation: sourceLocation)
        }
        let sealed = try seal(plaintext, with: sender, packetNumber: try packet.uint64("packet_number"))
        #expect(try hexString(sealed) == packet.string("packet"), sourceLocation: sourceLocation)
        let opened = try open(try packet.bytes("packet"), with: &receiver)
        #expect(opened.map(hexString) == hexString(plaintext), sourceLocation: sourceLocation)
    }
}

// MARK: - Noise steps

/// The `{"step", "h", "ck"}` entry named `name`.
func step(_ name: String, in steps: [JSON]) throws -> JSON {
    guard let found = steps.first(where: { (try? $0.string("step")) == name }) else {
        throw VectorError.missingKey(name, in: .array(steps))
    }
    return found
}

/// Replays the IKpsk2 pattern's tokens (as `NoisePattern.ikpsk2` lists them) on Swift's `SymmetricState`, recording h
/// and ck after each, in the vector's step names. Also returns the two handshake messages the replay produced (message
/// 2 with an empty payload), which must equal the ones `HandshakeMessages` sent.
func replayNoiseSteps(
    prologue: [UInt8], initiatorStatic: X25519PrivateKey, initiatorEphemeral: X25519PrivateKey,
    responderStatic: X25519PrivateKey, responderEphemeral: X25519PrivateKey, psk: SecureBytes, payload: [UInt8]
) throws -> (steps: [JSON], message1: [UInt8], message2: [UInt8]) {
    let pattern = HandshakeMessages.pattern
    var state = SymmetricState(protocolName: pattern.protocolName(hash: .sha256), hashFunction: .sha256)
    var steps: [JSON] = []
    func record(_ name: String) {
        steps.append(["step": .string(name), "h": .hex(state.handshakeHash), "ck": .hex(state.chainingKey.bytes)])
    }
    record("initialize")
    state.mixHash(prologue)
    record("prologue")
    for token in pattern.initiatorPreMessage where token == .s {
        state.mixHash(initiatorStatic.publicKey.bytes)
        record("premessage_s")
    }
    for token in pattern.responderPreMessage where token == .s {
        state.mixHash(responderStatic.publicKey.bytes)
        record("premessage_s")
    }
    var messages: [[UInt8]] = []
    for (index, tokens) in pattern.messages.enumerated() {
        let fromInitiator = index % 2 == 0
        let ephemeral = fromInitiator ? initiatorEphemeral : responderEphemeral
        var message: [UInt8] = []
        for token in tokens {
            switch token {
            case .e:
                message += ephemeral.publicKey.bytes
                state.mixHash(ephemeral.publicKey.bytes)
                if pattern.usesPresharedKeys { state.mixKey(SecureBytes(ephemeral.publicKey.bytes)) }
            case .s:
                let key = fromInitiator ? initiatorStatic : responderStatic
                message += try state.encryptAndHash(key.publicKey.bytes)
            case .ee: state.mixKey(try initiatorEphemeral.sharedSecret(with: responderEphemeral.publicKey))
            case .es: state.mixKey(try initiatorEphemeral.sharedSecret(with: responderStatic.publicKey))
            case .se: state.mixKey(try initiatorStatic.sharedSecret(with: responderEphemeral.publicKey))
            case .ss: state.mixKey(try initiatorStatic.sharedSecret(with: responderStatic.publicKey))
            case .psk: state.mixKeyAndHash(psk)
            }
            record("message\(index + 1).\(token)")
        }
        message += try state.encryptAndHash(fromInitiator ? payload : [])
        record("message\(index + 1).payload")
        messages.append(message)
    }
    return (steps, messages[0], messages[1])
}

/// A ``NetworkAddress`` from its vector form.
func networkAddress(_ json: JSON) throws -> NetworkAddress {
    let ip = try json.bytes("ip")
    let port = UInt16(try json.uint64("port"))
    switch try json.uint64("family") {
    case 4 where ip.count == 4: return NetworkAddress(ipv4: ip[0], ip[1], ip[2], ip[3], port: port)
    case 6:
        guard let address = NetworkAddress(ipv6: ip, port: port) else {
            throw VectorError.wrongType("ip", expected: "IPv6", in: json)
        }
        return address
    default: throw VectorError.wrongType("family", expected: "4 or 6", in: json)
    }
}

/// A ``NetworkAddress`` in the vector form.
func networkAddressJSON(_ address: NetworkAddress) -> JSON {
    ["family": .int(address.family.rawValue), "ip": .hex(address.addressBytes), "port": .int(address.port)]
}
