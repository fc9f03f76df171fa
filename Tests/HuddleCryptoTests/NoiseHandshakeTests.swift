import HuddleCrypto
import Testing

@Suite("Noise handshake behaviour")
struct NoiseHandshakeTests {
    struct Pair {
        let initiator: NoiseHandshake
        let responder: NoiseHandshake
    }

    func makePair(psk responderPSK: [UInt8] = [UInt8](repeating: 7, count: 32), prologue: [UInt8] = [1]) throws -> Pair
    {
        var random = ChaChaRandomGenerator(seed: 42)
        let initiatorStatic = X25519PrivateKey(using: &random)
        let responderStatic = X25519PrivateKey(using: &random)
        let initiator = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .initiator, prologue: [1], staticKey: initiatorStatic,
                remoteStaticKey: responderStatic.publicKey,
                presharedKeys: [SecureBytes([UInt8](repeating: 7, count: 32))]),
            using: &random)
        let responder = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .responder, prologue: prologue, staticKey: responderStatic,
                presharedKeys: [SecureBytes(responderPSK)]),
            using: &random)
        return Pair(initiator: initiator, responder: responder)
    }

    @Test("IKpsk2 completes, both sides derive matching keys, and transport works both ways")
    func completes() throws {
        let pair = try makePair()
        let first = try pair.initiator.writeMessage(payload: Array("tai64n stamp".utf8))
        #expect(try pair.responder.readMessage(first) == Array("tai64n stamp".utf8))
        let second = try pair.responder.writeMessage()
        #expect(second.count == 48)  // e (32) + encrypted empty payload (16): WireGuard's response body
        _ = try pair.initiator.readMessage(second)
        var a = try pair.initiator.split()
        var b = try pair.responder.split()
        #expect(a.handshakeHash == b.handshakeHash)
        #expect(pair.initiator.secretsAreWiped && pair.responder.secretsAreWiped)
        // Splitting again must not hand out keys derived from the wiped (all-zero) chaining key.
        #expect(throws: CryptoError.handshakeOutOfOrder("split was already called")) { try pair.initiator.split() }
        let sealed = try a.sending.encrypt([9, 9, 9], associatedData: [1])
        #expect(try b.receiving.decrypt(sealed, associatedData: [1]) == [9, 9, 9])
        let back = try b.sending.encrypt([8], associatedData: [])
        #expect(try a.receiving.decrypt(back, associatedData: []) == [8])
    }

    @Test("A wrong pre-shared key fails at the initiator when reading the response")
    func wrongPSK() throws {
        let pair = try makePair(psk: [UInt8](repeating: 8, count: 32))
        _ = try pair.responder.readMessage(try pair.initiator.writeMessage())
        let response = try pair.responder.writeMessage()
        #expect(throws: CryptoError.authenticationFailed) { try pair.initiator.readMessage(response) }
        #expect(throws: CryptoError.self) { try pair.initiator.split() }
    }

    @Test("A prologue mismatch fails silently as an authentication failure (H14)")
    func prologueMismatch() throws {
        let pair = try makePair(prologue: [2])
        let first = try pair.initiator.writeMessage()
        #expect(throws: CryptoError.authenticationFailed) { try pair.responder.readMessage(first) }
    }

    @Test("Every single-bit flip of message 1 is rejected")
    func bitFlips() throws {
        // The seeded generator makes every pair identical, so a fresh responder sees the same message 1.
        let first = try makePair().initiator.writeMessage(payload: [1, 2, 3])
        for bit in 0..<(first.count * 8) {
            let responder = try makePair().responder
            var tampered = first
            tampered[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            #expect(throws: CryptoError.self) { try responder.readMessage(tampered) }
        }
        let untouched = try makePair().responder
        #expect(try untouched.readMessage(first) == [1, 2, 3], "the untampered message is accepted")
    }

    @Test("Truncated messages and out-of-turn calls give typed errors")
    func misuse() throws {
        let pair = try makePair()
        #expect(throws: CryptoError.self) { try pair.responder.writeMessage() }
        let first = try pair.initiator.writeMessage()
        for length in [0, 31, 32, 79, first.count - 1] {
            let responder = try makePair().responder
            #expect(throws: CryptoError.self) { try responder.readMessage(Array(first.prefix(length))) }
        }
        let oversized = try makePair().responder
        #expect(throws: CryptoError.self) { try oversized.readMessage(first + [UInt8](repeating: 0, count: 65536)) }
        #expect(throws: CryptoError.self) { try pair.initiator.writeMessage() }
        var random = ChaChaRandomGenerator(seed: 1)
        #expect(throws: CryptoError.missingKey("1 pre-shared key(s)")) {
            try NoiseHandshake(
                configuration: .init(
                    pattern: .ikpsk2, role: .responder, staticKey: X25519PrivateKey(using: &random),
                    presharedKeys: [SecureBytes(count: 32) { _ in }, SecureBytes(count: 32) { _ in }]),
                using: &random)
        }
    }

    @Test("An IKpsk2 responder can read message 1, learn the initiator, then supply the PSK that applies")
    func deferredPSK() throws {
        var random = ChaChaRandomGenerator(seed: 42)
        let initiatorStatic = X25519PrivateKey(using: &random)
        let responderStatic = X25519PrivateKey(using: &random)
        let psk = SecureBytes([UInt8](repeating: 7, count: 32))
        let initiator = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .initiator, staticKey: initiatorStatic,
                remoteStaticKey: responderStatic.publicKey, presharedKeys: [psk]),
            using: &random)
        let responder = try NoiseHandshake(
            configuration: .init(pattern: .ikpsk2, role: .responder, staticKey: responderStatic), using: &random)
        _ = try responder.readMessage(try initiator.writeMessage())
        #expect(responder.remoteStaticKey == initiatorStatic.publicKey)
        // Writing message 2 needs the PSK: without it the handshake fails with a typed error.
        let probe = try NoiseHandshake(
            configuration: .init(pattern: .ikpsk2, role: .responder, staticKey: responderStatic), using: &random)
        _ = try probe.readMessage(
            try NoiseHandshake(
                configuration: .init(
                    pattern: .ikpsk2, role: .initiator, staticKey: initiatorStatic,
                    remoteStaticKey: responderStatic.publicKey, presharedKeys: [psk]),
                using: &random
            ).writeMessage())
        #expect(throws: CryptoError.missingKey("a pre-shared key")) { try probe.writeMessage() }

        try responder.supplyPresharedKeys([psk])
        #expect(throws: CryptoError.self) { try responder.supplyPresharedKeys([psk]) }
        _ = try initiator.readMessage(try responder.writeMessage())
        #expect(try initiator.split().handshakeHash == responder.split().handshakeHash)
    }

    @Test("A low-order ephemeral key aborts the handshake (K7)")
    func lowOrderEphemeral() throws {
        let pair = try makePair()
        var first = try pair.initiator.writeMessage()
        for index in 0..<32 { first[index] = 0 }
        #expect(throws: CryptoError.lowOrderPoint) { try pair.responder.readMessage(first) }
    }

    @Test("CipherState rekey changes the key deterministically and keeps the nonce")
    func rekey() throws {
        var a = CipherState(key: try SymmetricKey(bytes: [UInt8](repeating: 1, count: 32)))
        var b = a
        let first = try a.encrypt([1], associatedData: [])
        _ = try b.decrypt(first, associatedData: [])
        a.rekey()
        b.rekey()
        #expect(a.nonce == 1)
        #expect(a.key!.constantTimeEquals(b.key!))
        #expect(!a.key!.constantTimeEquals(try SymmetricKey(bytes: [UInt8](repeating: 1, count: 32))))
        let sealed = try a.encrypt([5], associatedData: [])
        #expect(try b.decrypt(sealed, associatedData: []) == [5])
    }
}
