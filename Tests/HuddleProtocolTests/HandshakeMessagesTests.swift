import HuddleCrypto
import HuddleProtocol
import HuddleWire
import Testing

@Suite("Handshake messages (IKpsk2 in WireGuard layouts)")
struct HandshakeMessagesTests {
    struct Party {
        let identity: X25519PrivateKey
        let authenticatorForPeer: MacAuthenticator
    }

    static let prologue = Array("huddle/1 session 0123456789abcdef".utf8)

    func parties(seed: UInt64 = 31) throws -> (Party, Party, SecureBytes, ChaChaRandomGenerator) {
        var random = ChaChaRandomGenerator(seed: seed)
        let alice = X25519PrivateKey(using: &random)
        let bob = X25519PrivateKey(using: &random)
        let macSecret = SecureBytes(count: 32, using: &random)
        let psk = SecureBytes(count: 32, using: &random)
        return (
            Party(
                identity: alice,
                authenticatorForPeer: try MacAuthenticator(macSecret: macSecret, receiverStatic: bob.publicKey)),
            Party(
                identity: bob,
                authenticatorForPeer: try MacAuthenticator(macSecret: macSecret, receiverStatic: alice.publicKey)),
            psk, random
        )
    }

    @Test("A full exchange yields matching keys, 152- and 92-byte datagrams and valid macs (H1)")
    func fullExchange() throws {
        var (alice, bob, psk, random) = try parties()
        let stamp = TAI64N(seconds: 1_700_000_000, nanoseconds: 5)
        let initiation = try HandshakeMessages.makeInitiation(
            localStatic: alice.identity, remoteStatic: bob.identity.publicKey, presharedKey: psk,
            prologue: Self.prologue, senderIndex: ReceiverIndex(7), timestamp: stamp,
            authenticator: alice.authenticatorForPeer, cookie: nil, using: &random)
        #expect(initiation.datagram.count == 152)
        // Bob checks mac1 with his own key (the same derivation Alice used for him).
        #expect(
            alice.authenticatorForPeer.hasValidMac1(initiation.datagram, mac1Offset: HandshakeInitiation.mac1Offset))

        let received = try HandshakeMessages.readInitiation(
            try HandshakeInitiation(decoding: initiation.datagram), localStatic: bob.identity, prologue: Self.prologue,
            using: &random)
        #expect(received.initiatorStatic == alice.identity.publicKey)
        #expect(received.timestamp == stamp)
        #expect(received.senderIndex == ReceiverIndex(7))

        let (bobKeys, response) = try HandshakeMessages.makeResponse(
            to: received, presharedKey: psk, senderIndex: ReceiverIndex(9), authenticator: bob.authenticatorForPeer,
            cookie: nil)
        #expect(response.count == 92)
        #expect(bob.authenticatorForPeer.hasValidMac1(response, mac1Offset: HandshakeResponse.mac1Offset))
        let layout = try HandshakeResponse(decoding: response)
        #expect(layout.receiverIndex == ReceiverIndex(7))
        #expect(layout.senderIndex == ReceiverIndex(9))
        let aliceKeys = try HandshakeMessages.readResponse(layout, for: initiation)

        #expect(aliceKeys.handshakeHash == bobKeys.handshakeHash)
        let sealed = ChaChaPoly.seal([1, 2, 3], counter: 0, authenticating: [UInt8](), key: aliceKeys.sending.key!)
        #expect(
            try ChaChaPoly.open(sealed, counter: 0, authenticating: [UInt8](), key: bobKeys.receiving.key!) == [
                1, 2, 3,
            ])
    }

    @Test("A responder with the wrong pre-shared key produces a response the initiator rejects")
    func wrongPSK() throws {
        var (alice, bob, psk, random) = try parties()
        let initiation = try HandshakeMessages.makeInitiation(
            localStatic: alice.identity, remoteStatic: bob.identity.publicKey, presharedKey: psk,
            prologue: Self.prologue, senderIndex: ReceiverIndex(1), timestamp: TAI64N(seconds: 1, nanoseconds: 0),
            authenticator: alice.authenticatorForPeer, cookie: nil, using: &random)
        let received = try HandshakeMessages.readInitiation(
            try HandshakeInitiation(decoding: initiation.datagram), localStatic: bob.identity, prologue: Self.prologue,
            using: &random)
        let (_, response) = try HandshakeMessages.makeResponse(
            to: received, presharedKey: SecureBytes(count: 32, using: &random), senderIndex: ReceiverIndex(2),
            authenticator: bob.authenticatorForPeer, cookie: nil)
        #expect(throws: CryptoError.authenticationFailed) {
            try HandshakeMessages.readResponse(try HandshakeResponse(decoding: response), for: initiation)
        }
    }

    @Test("A prologue mismatch (another session) fails at the responder (H14)")
    func prologueMismatch() throws {
        var (alice, bob, psk, random) = try parties()
        let initiation = try HandshakeMessages.makeInitiation(
            localStatic: alice.identity, remoteStatic: bob.identity.publicKey, presharedKey: psk,
            prologue: Self.prologue, senderIndex: ReceiverIndex(1), timestamp: TAI64N(seconds: 1, nanoseconds: 0),
            authenticator: alice.authenticatorForPeer, cookie: nil, using: &random)
        #expect(throws: CryptoError.authenticationFailed) {
            try HandshakeMessages.readInitiation(
                try HandshakeInitiation(decoding: initiation.datagram), localStatic: bob.identity,
                prologue: Array("huddle/1 another session".utf8), using: &random)
        }
    }

    @Test("Re-stamping with a cookie keeps the Noise message and adds a valid mac2")
    func restamp() throws {
        var (alice, bob, psk, random) = try parties()
        let initiation = try HandshakeMessages.makeInitiation(
            localStatic: alice.identity, remoteStatic: bob.identity.publicKey, presharedKey: psk,
            prologue: Self.prologue, senderIndex: ReceiverIndex(1), timestamp: TAI64N(seconds: 1, nanoseconds: 0),
            authenticator: alice.authenticatorForPeer, cookie: nil, using: &random)
        let cookie = [UInt8](repeating: 9, count: 16)
        let stamped = try HandshakeMessages.restamp(
            initiation, authenticator: alice.authenticatorForPeer, cookie: cookie)
        #expect(
            stamped.datagram[0..<HandshakeInitiation.mac1Offset]
                == initiation.datagram[0..<HandshakeInitiation.mac1Offset])
        #expect(
            MacAuthenticator.hasValidMac2(stamped.datagram, mac2Offset: HandshakeInitiation.mac2Offset, cookie: cookie))
        #expect(
            !MacAuthenticator.hasValidMac2(
                initiation.datagram, mac2Offset: HandshakeInitiation.mac2Offset, cookie: cookie))
        _ = bob
    }
}
