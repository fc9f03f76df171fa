import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// TEST-MATRIX FZ2: handshake initiations mutated by the fuzzer and then given a *valid* `mac1` (as an insider who
/// holds the mac secret could), so every input reaches the responder's Noise processing instead of stopping at the
/// cheap `mac1` check, where the `wire` target's inputs end.
///
/// Input: an XOR mask over the 120 bytes `mac1` covers (all zero: the genuine initiation), then optionally one byte
/// that lengthens or shortens the datagram by its value as a signed integer. After each input the responder (a
/// fresh copy of one that knows the initiator) must have answered at most once: with a 92-byte response only when
/// nothing but the sender index changed (the one field outside the Noise transcript), or with an 80-byte
/// HANDSHAKE_REFUSED (the Noise message did not decrypt, as another revision's would not; docs/PROTOCOL.md 2.5) that
/// opens under the key the `mac1` proved and names the responder's own prologue; and reported a connection to no key
/// but the initiator's. The genuine initiation must be answered with a response.
public enum HandshakeTarget: FuzzTarget {
    public static let name = "handshake"

    struct Fixture {
        var responder: Endpoint
        let initiation: [UInt8]
        let mac: MacAuthenticator
        let initiator: X25519PublicKey
        let now: Instant
    }

    nonisolated(unsafe) static let fixture: Fixture = makeFixture()
    static let initiatorAddress = NetworkAddress(ipv4: 10, 0, 0, 1, port: 4000)
    /// The sender index: bytes 4 ..< 8.
    static let senderIndex = 4..<8

    static func makeFixture() -> Fixture {
        var random = ChaChaRandomGenerator(seed: 0xF2)
        let initiatorIdentity = Identity(using: &random)
        let responderIdentity = Identity(using: &random)
        let presharedKey = SecureBytes(count: 32, using: &random)
        let macSecret = SecureBytes(count: 32, using: &random)
        var initiator = HandshakeFixtureEndpoint.make(initiatorIdentity, seed: 1)
        var responder = HandshakeFixtureEndpoint.make(responderIdentity, seed: 2)
        let responderKey = responderIdentity.agreementKey.publicKey
        let initiatorKey = initiatorIdentity.agreementKey.publicKey
        let now = Instant(nanoseconds: 1_000_000_000)
        do {
            try initiator.addPeer(
                PeerCredentials(staticKey: responderKey, presharedKey: presharedKey, macSecret: macSecret))
            try responder.addPeer(
                PeerCredentials(staticKey: initiatorKey, presharedKey: presharedKey, macSecret: macSecret))
            try initiator.connect(to: responderKey, at: NetworkAddress(ipv4: 10, 0, 0, 2, port: 4000), now: now)
            guard let (_, initiation) = initiator.pollTransmit(now: now) else {
                preconditionFailure("the initiator sent no initiation")
            }
            let mac = try MacAuthenticator(macSecret: macSecret, receiverStatic: responderKey)
            return Fixture(responder: responder, initiation: initiation, mac: mac, initiator: initiatorKey, now: now)
        } catch {
            preconditionFailure("fixture: \(error)")
        }
    }

    public static func run(_ input: UnsafeRawBufferPointer) {
        let fixture = Self.fixture
        var datagram = fixture.initiation
        for (offset, byte) in input.prefix(HandshakeInitiation.mac1Offset).enumerated() { datagram[offset] ^= byte }
        if input.count > HandshakeInitiation.mac1Offset {
            let change = Int(Int8(bitPattern: input[HandshakeInitiation.mac1Offset]))
            if change < 0 {
                datagram.removeLast(min(-change, datagram.count))
            } else {
                datagram += [UInt8](repeating: 0, count: change)
            }
        }
        // A valid mac1 (and no mac2) for whatever the fuzzer made, where the datagram still has room for them.
        if datagram.count >= HandshakeInitiation.encodedLength {
            try? fixture.mac.stamp(
                &datagram, mac1Offset: HandshakeInitiation.mac1Offset, mac2Offset: HandshakeInitiation.mac2Offset,
                cookie: nil)
        }
        var responder = fixture.responder
        responder.handle(datagram: datagram, from: initiatorAddress, now: fixture.now)
        var replies: [[UInt8]] = []
        while let (_, reply) = responder.pollTransmit(now: fixture.now) { replies.append(reply) }
        while let event = responder.pollEvent() {
            if case .connected(_, let peer) = event {
                precondition(peer == fixture.initiator, "a connection to a key nobody proved")
            }
        }
        precondition(replies.count <= 1, "\(replies.count) replies to one initiation")
        // The genuine initiation must be answered: otherwise every other check here would pass vacuously.
        precondition(datagram != fixture.initiation || replies.count == 1, "the genuine initiation was not answered")
        guard let reply = replies.first else { return }
        if reply.first == PacketType.handshakeRefusal.rawValue {
            precondition(datagram != fixture.initiation, "the genuine initiation was refused")
            guard let refusal = try? HandshakeRefusal(decoding: reply),
                let opened = try? fixture.mac.openRefusal(
                    refusal.encryptedPrologue, nonce: refusal.nonce, header: refusal.header,
                    answeringMac1: datagram[HandshakeInitiation.mac1Offset..<HandshakeInitiation.mac2Offset])
            else { preconditionFailure("a refusal that does not open under the mac1's credentials") }
            precondition(
                HandshakeRefusal.prologue(inPlaintext: opened) == HandshakeFixtureEndpoint.prologue,
                "a refusal naming another prologue")
            return
        }
        precondition(reply.count == HandshakeResponse.encodedLength, "a \(reply.count)-byte reply")
        let changed = (0..<HandshakeInitiation.mac1Offset).filter {
            $0 >= datagram.count || datagram[$0] != fixture.initiation[$0]
        }
        precondition(
            datagram.count == HandshakeInitiation.encodedLength && changed.allSatisfy(senderIndex.contains),
            "answered an initiation changed at \(changed) (length \(datagram.count))")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var otherIndex = [UInt8](repeating: 0, count: HandshakeInitiation.mac1Offset)
        otherIndex[5] = 0x5A
        var flippedStatic = [UInt8](repeating: 0, count: HandshakeInitiation.mac1Offset)
        flippedStatic[40] = 1
        return [
            ("genuine", [UInt8](repeating: 0, count: HandshakeInitiation.mac1Offset)),
            ("other-index", otherIndex),
            ("flipped-static", flippedStatic),
            ("one-byte-longer", [UInt8](repeating: 0, count: HandshakeInitiation.mac1Offset) + [1]),
        ]
    }
}
