import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// TEST-MATRIX FZ2, the initiator's side: handshake responses and cookie replies mutated by the fuzzer and handed to
/// an initiator whose initiation is pending. A response gets a *valid* `mac1` (as an insider holding the mac secret
/// could stamp), so it reaches the initiator's Noise processing; a cookie reply has no MAC of its own (its cookie is
/// sealed with the initiation's `mac1` as associated data), so it is delivered as mutated.
///
/// Input: one byte whose low bit picks the reply (0: the responder's genuine response, 1: its genuine cookie reply,
/// from a responder that demands cookies), then an XOR mask over the bytes before the response's `mac1` (the whole
/// cookie reply), then optionally one byte that lengthens or shortens the datagram by its value as a signed integer.
/// After each input the initiator (built afresh for each input, its initiation pending: a copied `Endpoint` would share
/// the handshake's secrets, which completing a handshake wipes) must have connected to no key but
/// the responder's, and only to a response that differs from the genuine one in nothing but the sender index (the
/// one field outside the Noise transcript); it must have accepted a cookie reply only when it is the genuine one, and
/// then sent exactly one initiation again, now 152 bytes with a `mac2`. The genuine response must connect and the
/// genuine cookie reply must be accepted: otherwise every other check would pass vacuously.
public enum HandshakeReplyTarget: FuzzTarget {
    public static let name = "handshake-reply"

    struct Fixture {
        let initiatorIdentity: Identity
        let responderCredentials: PeerCredentials
        let initiation: [UInt8]
        let response: [UInt8]
        let cookieReply: [UInt8]
        /// Stamps `mac1` on what reaches the initiator (keyed to its static key).
        let mac: MacAuthenticator
        let responder: X25519PublicKey
        let now: Instant
    }

    nonisolated(unsafe) static let fixture: Fixture = makeFixture()
    static let responderAddress = NetworkAddress(ipv4: 10, 0, 0, 2, port: 4000)
    /// The response's sender index: bytes 4 ..< 8.
    static let senderIndex = 4..<8

    static func makeFixture() -> Fixture {
        var random = ChaChaRandomGenerator(seed: 0xF3)
        let initiatorIdentity = Identity(using: &random)
        let responderIdentity = Identity(using: &random)
        let presharedKey = SecureBytes(count: 32, using: &random)
        let macSecret = SecureBytes(count: 32, using: &random)
        var responder = HandshakeFixtureEndpoint.make(responderIdentity, seed: 2)
        // The same responder, demanding a cookie from every initiation.
        var loaded = HandshakeFixtureEndpoint.make(responderIdentity, seed: 3, cookiesAbove: 0)
        let responderKey = responderIdentity.agreementKey.publicKey
        let initiatorKey = initiatorIdentity.agreementKey.publicKey
        let initiatorAddress = NetworkAddress(ipv4: 10, 0, 0, 1, port: 4000)
        let now = Instant(nanoseconds: 1_000_000_000)
        let responderCredentials = PeerCredentials(
            staticKey: responderKey, presharedKey: presharedKey, macSecret: macSecret)
        do {
            var initiator = try makeInitiator(
                identity: initiatorIdentity, knowing: responderCredentials, sendingAt: now)
            let initiatorCredentials = PeerCredentials(
                staticKey: initiatorKey, presharedKey: presharedKey, macSecret: macSecret)
            try responder.addPeer(initiatorCredentials)
            try loaded.addPeer(initiatorCredentials)
            guard let (_, initiation) = initiator.pollTransmit(now: now) else {
                preconditionFailure("the initiator sent no initiation")
            }
            responder.handle(datagram: initiation, from: initiatorAddress, now: now)
            loaded.handle(datagram: initiation, from: initiatorAddress, now: now)
            guard let (_, response) = responder.pollTransmit(now: now),
                response.count == HandshakeResponse.encodedLength
            else { preconditionFailure("the responder did not answer") }
            guard let (_, cookieReply) = loaded.pollTransmit(now: now), cookieReply.count == CookieReply.encodedLength
            else { preconditionFailure("the loaded responder sent no cookie reply") }
            let mac = try MacAuthenticator(macSecret: macSecret, receiverStatic: initiatorKey)
            return Fixture(
                initiatorIdentity: initiatorIdentity, responderCredentials: responderCredentials,
                initiation: initiation, response: response, cookieReply: cookieReply, mac: mac,
                responder: responderKey, now: now)
        } catch {
            preconditionFailure("fixture: \(error)")
        }
    }

    /// An endpoint of `identity` that knows the responder and has called it at `now`; its initiation is still
    /// queued. The same inputs give the same initiation (the generator is seeded, the clock passed in).
    static func makeInitiator(
        identity: Identity, knowing responder: PeerCredentials, sendingAt now: Instant
    ) throws -> Endpoint {
        var initiator = HandshakeFixtureEndpoint.make(identity, seed: 1)
        try initiator.addPeer(responder)
        try initiator.connect(to: responder.staticKey, at: responderAddress, now: now)
        return initiator
    }

    public static func run(_ input: UnsafeRawBufferPointer) {
        guard let selector = input.first else { return }
        let fixture = Self.fixture
        let isCookieReply = selector & 1 == 1
        let genuine = isCookieReply ? fixture.cookieReply : fixture.response
        let masked = isCookieReply ? CookieReply.encodedLength : HandshakeResponse.mac1Offset
        let body = UnsafeRawBufferPointer(rebasing: input.dropFirst())
        var datagram = genuine
        for (offset, byte) in body.prefix(masked).enumerated() { datagram[offset] ^= byte }
        if body.count > masked {
            let change = Int(Int8(bitPattern: body[masked]))
            if change < 0 {
                datagram.removeLast(min(-change, datagram.count))
            } else {
                datagram += [UInt8](repeating: 0, count: change)
            }
        }
        if !isCookieReply, datagram.count >= HandshakeResponse.encodedLength {
            try? fixture.mac.stamp(
                &datagram, mac1Offset: HandshakeResponse.mac1Offset, mac2Offset: HandshakeResponse.mac2Offset,
                cookie: nil)
        }
        guard
            var initiator = try? makeInitiator(
                identity: fixture.initiatorIdentity, knowing: fixture.responderCredentials, sendingAt: fixture.now),
            let (_, initiation) = initiator.pollTransmit(now: fixture.now)
        else { preconditionFailure("the initiator could not be rebuilt") }
        precondition(initiation == fixture.initiation, "the rebuilt initiator sent another initiation")
        let acceptedBefore = initiator.statistics.cookieRepliesAccepted
        initiator.handle(datagram: datagram, from: responderAddress, now: fixture.now)
        var connected = false
        while let event = initiator.pollEvent() {
            if case .connected(_, let peer) = event {
                precondition(peer == fixture.responder, "a connection to a key nobody proved")
                connected = true
            }
        }
        var sent: [[UInt8]] = []
        while let (_, datagram) = initiator.pollTransmit(now: fixture.now) { sent.append(datagram) }
        let accepted = initiator.statistics.cookieRepliesAccepted - acceptedBefore
        if isCookieReply {
            precondition(!connected, "a cookie reply completed a handshake")
            precondition(accepted == 0 || datagram == genuine, "accepted a changed cookie reply")
            precondition(datagram != genuine || accepted == 1, "the genuine cookie reply was not accepted")
            if accepted == 1 {
                precondition(
                    sent.count == 1 && sent[0].count == HandshakeInitiation.encodedLength
                        && sent[0][HandshakeInitiation.mac2Offset...].contains { $0 != 0 },
                    "after a cookie: \(sent.map(\.count)) bytes sent, not one initiation with a mac2")
            }
            return
        }
        precondition(accepted == 0, "a response was taken for a cookie reply")
        precondition(datagram != genuine || connected, "the genuine response did not connect")
        guard connected else { return }
        let changed = (0..<HandshakeResponse.mac1Offset).filter {
            $0 >= datagram.count || datagram[$0] != genuine[$0]
        }
        precondition(
            datagram.count == HandshakeResponse.encodedLength && changed.allSatisfy(senderIndex.contains),
            "connected on a response changed at \(changed) (length \(datagram.count))")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var otherIndex = [UInt8](repeating: 0, count: HandshakeResponse.mac1Offset)
        otherIndex[5] = 0x5A
        var flippedEphemeral = [UInt8](repeating: 0, count: HandshakeResponse.mac1Offset)
        flippedEphemeral[20] = 1
        var flippedCookie = [UInt8](repeating: 0, count: CookieReply.encodedLength)
        flippedCookie[40] = 1
        return [
            ("response", [0] + [UInt8](repeating: 0, count: HandshakeResponse.mac1Offset)),
            ("response-other-index", [0] + otherIndex),
            ("response-flipped-ephemeral", [0] + flippedEphemeral),
            ("cookie-reply", [1] + [UInt8](repeating: 0, count: CookieReply.encodedLength)),
            ("cookie-reply-flipped", [1] + flippedCookie),
            ("cookie-reply-shorter", [1] + [UInt8](repeating: 0, count: CookieReply.encodedLength) + [0xFF]),
        ]
    }
}
