import Testing

@testable import HuddleCrypto

@Suite("Crypto primitives")
struct PrimitiveTests {
    @Test("X25519 rejects every small-order public key with lowOrderPoint (K7)")
    func lowOrderPoints() throws {
        // The canonical small-order points of Curve25519 (0, 1, the order-8 points, p-1, p, p+1).
        let points = [
            "0000000000000000000000000000000000000000000000000000000000000000",
            "0100000000000000000000000000000000000000000000000000000000000000",
            "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
            "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
            "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        ]
        var random = ChaChaRandomGenerator(seed: 9)
        let key = X25519PrivateKey(using: &random)
        for point in points {
            #expect(throws: CryptoError.lowOrderPoint) {
                try key.sharedSecret(with: X25519PublicKey(bytes: hex(point)))
            }
        }
        #expect(throws: CryptoError.invalidLength(what: "X25519 public key", expected: 32, actual: 31)) {
            try X25519PublicKey(bytes: [UInt8](repeating: 1, count: 31))
        }
    }

    @Test("ChaCha20-Poly1305 rejects any tampering, wrong counter, wrong AD and short input")
    func aeadRejects() throws {
        let key = try SymmetricKey(bytes: [UInt8](repeating: 3, count: 32))
        let sealed = ChaChaPoly.seal([1, 2, 3, 4], counter: 7, authenticating: [0xAA], key: key)
        #expect(sealed.count == 4 + 16)
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(throws: CryptoError.authenticationFailed) {
                try ChaChaPoly.open(tampered, counter: 7, authenticating: [0xAA], key: key)
            }
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try ChaChaPoly.open(sealed, counter: 8, authenticating: [0xAA], key: key)
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try ChaChaPoly.open(sealed, counter: 7, authenticating: [0xAB], key: key)
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try ChaChaPoly.open(sealed.prefix(15), counter: 7, authenticating: [0xAA], key: key)
        }
        #expect(try ChaChaPoly.open(sealed, counter: 7, authenticating: [0xAA], key: key) == [1, 2, 3, 4])
        let empty = ChaChaPoly.seal([UInt8](), counter: 0, authenticating: [UInt8](), key: key)
        #expect(try ChaChaPoly.open(empty, counter: 0, authenticating: [UInt8](), key: key) == [])
    }

    @Test("XChaCha20-Poly1305 round-trips with explicit and generated nonces and rejects tampering")
    func xchacha() throws {
        let key = try SymmetricKey(bytes: [UInt8](repeating: 5, count: 32))
        var random = ChaChaRandomGenerator(seed: 3)
        let sealed = XChaChaPoly.seal([1, 2, 3], authenticating: [9], key: key, using: &random)
        #expect(sealed.count == 24 + 3 + 16)
        #expect(try XChaChaPoly.open(nonceAndCiphertext: sealed, authenticating: [9], key: key) == [1, 2, 3])
        var tampered = sealed
        tampered[30] ^= 4
        #expect(throws: CryptoError.authenticationFailed) {
            try XChaChaPoly.open(nonceAndCiphertext: tampered, authenticating: [9], key: key)
        }
        #expect(throws: CryptoError.self) {
            try XChaChaPoly.seal([1], nonce: [UInt8](repeating: 0, count: 12), authenticating: [UInt8](), key: key)
        }
        let again = XChaChaPoly.seal([1, 2, 3], authenticating: [9], key: key, using: &random)
        #expect(Array(again.prefix(24)) != Array(sealed.prefix(24)), "fresh nonce each call")
    }

    @Test("HKDF refuses more than 255 blocks and produces exactly the requested length")
    func hkdfLimits() throws {
        let prk = HKDF.extract(salt: [UInt8](), inputKeyMaterial: [1, 2, 3])
        #expect(try HKDF.expand(pseudoRandomKey: prk, info: [UInt8](), outputLength: 8160).count == 8160)
        #expect(try HKDF.expand(pseudoRandomKey: prk, info: [UInt8](), outputLength: 0).count == 0)
        #expect(throws: CryptoError.self) { try HKDF.expand(pseudoRandomKey: prk, info: [UInt8](), outputLength: 8161) }
    }

    @Test("crypto_kdf sub-keys differ per id and context, and bad parameters are typed errors")
    func keyDerivation() throws {
        let master = SecureBytes([UInt8](repeating: 1, count: 32))
        let context = try KeyDerivation.Context("hdl-test")
        let one = try KeyDerivation.deriveSubkey(from: master, id: 1, context: context)
        let two = try KeyDerivation.deriveSubkey(from: master, id: 2, context: context)
        let other = try KeyDerivation.deriveSubkey(from: master, id: 1, context: try .init("hdl-othr"))
        #expect(!one.constantTimeEquals(two))
        #expect(!one.constantTimeEquals(other))
        #expect(one.constantTimeEquals(try KeyDerivation.deriveSubkey(from: master, id: 1, context: context)))
        #expect(throws: CryptoError.self) { try KeyDerivation.Context("short") }
        #expect(throws: CryptoError.self) {
            try KeyDerivation.deriveSubkey(from: master, id: 1, context: context, length: 15)
        }
        #expect(throws: CryptoError.self) {
            try KeyDerivation.deriveSubkey(from: SecureBytes([1]), id: 1, context: context)
        }
    }

    #if DEBUG
        @Test("S2: a released SecureBytes is all zeros before its memory is freed, every byte of it")
        func wipedOnRelease() {
            let seen = WipedBuffers()
            SecureBytes.$wipeObserver.withValue({ seen.append(Array($0)) }) {
                var secret: SecureBytes? = SecureBytes([UInt8](repeating: 0xA5, count: 32))
                #expect(secret?.copyToArray() == [UInt8](repeating: 0xA5, count: 32))
                secret = nil
            }
            // The buffer is 32 bytes (allocations are at least 1 byte; the observer sees all of it).
            #expect(seen.buffers == [[UInt8](repeating: 0, count: 32)], "\(seen.buffers)")
        }
    #endif

    @Test("SecureBytes compares in constant time, redacts its description and reports zero contents")
    func secureBytes() {
        let a = SecureBytes([1, 2, 3])
        #expect(a.constantTimeEquals(SecureBytes([1, 2, 3])))
        #expect(!a.constantTimeEquals(SecureBytes([1, 2, 4])))
        #expect(!a.constantTimeEquals(SecureBytes([1, 2])))
        #expect(!a.description.contains("1"))
        #expect(SecureBytes(count: 4) { _ in }.isAllZero)
        #expect(!a.isAllZero)
        #expect(ConstantTime.equals([1, 2], [1, 2]))
        #expect(!ConstantTime.equals([1, 2], [1, 3]))
        #expect(!ConstantTime.equals([1, 2], [1]))
    }

    @Test("The seeded generator is reproducible, seed-sensitive and independent of how reads are split")
    func deterministicRandom() {
        var a = ChaChaRandomGenerator(seed: 5)
        var b = ChaChaRandomGenerator(seed: 5)
        var c = ChaChaRandomGenerator(seed: 6)
        let whole = a.bytes(count: 1500)
        let pieces = b.bytes(count: 700) + b.bytes(count: 1) + b.bytes(count: 799)
        #expect(whole == pieces)
        #expect(c.bytes(count: 1500) != whole)
        #expect(Set(whole).count > 200, "output looks random")
    }
}

/// What ``SecureBytes/wipeObserver`` saw, collected from inside its closure.
private final class WipedBuffers: @unchecked Sendable {
    private(set) var buffers: [[UInt8]] = []
    func append(_ buffer: [UInt8]) { buffers.append(buffer) }
}
