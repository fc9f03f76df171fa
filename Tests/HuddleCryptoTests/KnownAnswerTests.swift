import HuddleCrypto
import Testing

/// Known-answer tests against the RFC vectors in `Vectors/rfc-vectors.json` (cross-checked there by
/// `check_rfc_vectors.py` against pyca/cryptography and hashlib). TEST-MATRIX K2, K3.
@Suite("Known-answer tests")
struct KnownAnswerTests {
    let vectors: [String: Any]

    init() throws {
        vectors = try loadVectors("rfc-vectors")
    }

    @Test("RFC 8439 ChaCha20-Poly1305-IETF seals and opens byte for byte")
    func chaCha20Poly1305() throws {
        let cases = entries("chacha20poly1305_ietf", in: vectors)
        #expect(cases.count == 2)
        for vector in cases {
            let key = try SymmetricKey(bytes: vector.bytes("key"))
            let nonce = try ChaChaPoly.Nonce(bytes: vector.bytes("nonce"))
            let sealed = ChaChaPoly.seal(
                vector.bytes("plaintext"), nonce: nonce, authenticating: vector.bytes("aad"), key: key)
            #expect(
                hexString(sealed) == vector.string("ciphertext") + vector.string("tag"), "\(vector.string("source"))")
            let opened = try ChaChaPoly.open(sealed, nonce: nonce, authenticating: vector.bytes("aad"), key: key)
            #expect(opened == vector.bytes("plaintext"))

            // Detached, in place.
            var buffer = vector.bytes("plaintext")
            var tag = [UInt8](repeating: 0, count: 16)
            let aad = vector.bytes("aad")
            buffer.withUnsafeMutableBytes { body in
                tag.withUnsafeMutableBytes { tagBytes in
                    aad.withUnsafeBytes { ad in
                        ChaChaPoly.sealInPlace(body, tag: tagBytes, nonce: nonce, authenticating: ad, key: key)
                    }
                }
            }
            #expect(hexString(buffer) == vector.string("ciphertext"))
            #expect(hexString(tag) == vector.string("tag"))
            try buffer.withUnsafeMutableBytes { body in
                try tag.withUnsafeBytes { tagBytes in
                    try aad.withUnsafeBytes { ad in
                        try ChaChaPoly.openInPlace(body, tag: tagBytes, nonce: nonce, authenticating: ad, key: key)
                    }
                }
            }
            #expect(buffer == vector.bytes("plaintext"))
        }
    }

    @Test("Transport nonce 0^4 || LE64(n) matches an independent implementation at n = 0, 1, 2^32, 2^60 (K3)")
    func transportNonce() throws {
        let file = try loadVectors("transport-nonce-vectors")
        let cases = entries("transport_nonce", in: file)
        #expect(cases.count == 5)
        for vector in cases {
            let key = try SymmetricKey(bytes: vector.bytes("key"))
            let counter = UInt64(vector.string("counter"))!
            let sealed = ChaChaPoly.seal(
                vector.bytes("plaintext"), counter: counter, authenticating: vector.bytes("aad"), key: key)
            #expect(hexString(sealed) == vector.string("ciphertext_and_tag"), "counter \(counter)")
            // Combined in place: plaintext then 16 spare bytes.
            var buffer = vector.bytes("plaintext") + [UInt8](repeating: 0, count: 16)
            let length = vector.bytes("plaintext").count
            let aad = vector.bytes("aad")
            buffer.withUnsafeMutableBytes { raw in
                aad.withUnsafeBytes { ad in
                    _ = ChaChaPoly.sealInPlace(
                        combined: raw, plaintextLength: length, nonce: .init(counter: counter), authenticating: ad,
                        key: key)
                }
            }
            #expect(hexString(buffer) == vector.string("ciphertext_and_tag"))
            let openedLength = try buffer.withUnsafeMutableBytes { raw in
                try aad.withUnsafeBytes { ad in
                    try ChaChaPoly.openInPlace(
                        combined: raw, nonce: .init(counter: counter), authenticating: ad, key: key)
                }
            }
            #expect(Array(buffer[0..<openedLength]) == vector.bytes("plaintext"))
        }
    }

    @Test("RFC 7748 X25519 scalar multiplication, iteration and Diffie-Hellman")
    func x25519() throws {
        let cases = entries("x25519", in: vectors)
        #expect(cases.count == 5)
        for vector in cases {
            switch vector.string("type") {
            case "iterated":
                var k = vector.bytes("k")
                var u = vector.bytes("u")
                for _ in 0..<(vector["iterations"] as! Int) {
                    let result = try X25519PrivateKey(secretBytes: k).sharedSecret(with: X25519PublicKey(bytes: u))
                    u = k
                    k = result.copyToArray()
                }
                #expect(hexString(k) == vector.string("output"))
            case "dh":
                let alice = try X25519PrivateKey(secretBytes: vector.bytes("alice_private"))
                let bob = try X25519PrivateKey(secretBytes: vector.bytes("bob_private"))
                #expect(alice.publicKey.bytes == vector.bytes("alice_public"))
                #expect(bob.publicKey.bytes == vector.bytes("bob_public"))
                let shared = try alice.sharedSecret(with: bob.publicKey)
                #expect(hexString(shared.copyToArray()) == vector.string("shared"))
                #expect(shared.constantTimeEquals(try bob.sharedSecret(with: alice.publicKey)))
            default:
                let key = try X25519PrivateKey(secretBytes: vector.bytes("scalar"))
                let shared = try key.sharedSecret(with: X25519PublicKey(bytes: vector.bytes("u")))
                #expect(hexString(shared.copyToArray()) == vector.string("output"))
            }
        }
    }

    @Test("RFC 8032 Ed25519 keys and signatures")
    func ed25519() throws {
        let cases = entries("ed25519", in: vectors)
        #expect(cases.count == 5)
        for vector in cases {
            let key = try Ed25519PrivateKey(seedBytes: vector.bytes("secret_key"))
            #expect(key.publicKey.bytes == vector.bytes("public_key"))
            let signature = key.signature(for: vector.bytes("message"))
            #expect(hexString(signature) == vector.string("signature"), "\(vector.string("source"))")
            #expect(key.publicKey.isValidSignature(signature, for: vector.bytes("message")))
            var tampered = signature
            tampered[10] ^= 1
            #expect(!key.publicKey.isValidSignature(tampered, for: vector.bytes("message")))
            #expect(!key.publicKey.isValidSignature(signature, for: vector.bytes("message") + [0]))
        }
    }

    @Test("RFC 7693 and reference BLAKE2b, keyed and unkeyed, one-shot and incremental")
    func blake2b() throws {
        let cases = entries("blake2b", in: vectors)
        #expect(cases.count == 14)
        for vector in cases {
            let key = vector.bytes("key")
            let message = vector.bytes("message")
            let length = vector["out_len"] as! Int
            let oneShot =
                key.isEmpty
                ? BLAKE2b.hash(message, outputLength: length)
                : try BLAKE2b.hash(message, outputLength: length, key: key)
            #expect(hexString(oneShot) == vector.string("digest"), "\(vector.string("source"))")
            var incremental = try BLAKE2b(outputLength: length, key: key)
            let split = message.count / 3
            incremental.update(message[0..<split])
            incremental.update(message[split...])
            #expect(hexString(incremental.finalize()) == vector.string("digest"))
        }
    }

    @Test("FIPS 180 SHA-256")
    func sha256() {
        let cases = entries("sha256", in: vectors)
        #expect(cases.count == 3)
        for vector in cases {
            #expect(hexString(SHA256.hash(vector.bytes("message"))) == vector.string("digest"))
            var hasher = SHA256()
            for byte in vector.bytes("message") { hasher.update([byte]) }
            #expect(hexString(hasher.finalize()) == vector.string("digest"))
        }
    }

    @Test("RFC 4231 HMAC-SHA-256 test cases 1-7")
    func hmacSHA256() {
        let cases = entries("hmac_sha256", in: vectors)
        #expect(cases.count == 7)
        for vector in cases {
            let tag = HMACSHA256.authenticationCode(for: vector.bytes("data"), key: vector.bytes("key")).copyToArray()
            let expected = vector.bytes("hmac")
            let compared = (vector["truncated_to"] as? Int).map { Array(tag.prefix($0)) } ?? tag
            #expect(compared == expected, "\(vector.string("source"))")
            if vector["truncated_to"] == nil {
                #expect(
                    HMACSHA256.isValidAuthenticationCode(expected, for: vector.bytes("data"), key: vector.bytes("key")))
                var wrong = expected
                wrong[31] ^= 0x80
                #expect(
                    !HMACSHA256.isValidAuthenticationCode(wrong, for: vector.bytes("data"), key: vector.bytes("key")))
            }
        }
    }

    @Test("RFC 5869 HKDF-SHA-256 test cases 1-3 (K2)")
    func hkdf() throws {
        let cases = entries("hkdf_sha256", in: vectors)
        #expect(cases.count == 3)
        for vector in cases {
            let prk = HKDF.extract(salt: vector.bytes("salt"), inputKeyMaterial: vector.bytes("ikm"))
            #expect(hexString(prk.copyToArray()) == vector.string("prk"), "\(vector.string("source"))")
            let okm = try HKDF.expand(
                pseudoRandomKey: prk, info: vector.bytes("info"), outputLength: vector["length"] as! Int)
            #expect(hexString(okm.copyToArray()) == vector.string("okm"))
        }
    }
}
