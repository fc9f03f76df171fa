import CSodium

/// An Ed25519 public (verifying) key (RFC 8032): 32 bytes.
public struct Ed25519PublicKey: Hashable, Sendable {
    /// Key length in bytes.
    public static let length = 32
    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// Wraps 32 bytes. Throws for any other length.
    public init(bytes: some Collection<UInt8>) throws {
        let array = Array(bytes)
        guard array.count == Self.length else {
            throw CryptoError.invalidLength(what: "Ed25519 public key", expected: Self.length, actual: array.count)
        }
        self.bytes = array
    }

    /// Whether `signature` is a valid signature of `message` by this key. Malformed signatures return `false`.
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Sequence<UInt8>) -> Bool {
        guard signature.count == Ed25519PrivateKey.signatureLength else { return false }
        Sodium.initialize()
        let signatureBytes = Array(signature)
        return withContiguousBytes(of: message) { body in
            crypto_sign_verify_detached(signatureBytes, body.bytePointer, UInt64(body.count), bytes) == 0
        }
    }
}

/// An Ed25519 signing key, held as its 32-byte seed and libsodium's expanded 64-byte form, both wiped on release.
public struct Ed25519PrivateKey: Sendable {
    /// Seed length in bytes.
    public static let seedLength = 32
    /// Signature length in bytes.
    public static let signatureLength = 64

    /// The 32-byte seed from which the key pair is derived (RFC 8032's "private key").
    public let seed: SecureBytes
    private let expanded: SecureBytes
    /// The matching public key.
    public let publicKey: Ed25519PublicKey

    /// A fresh key pair from `generator`.
    public init(using generator: inout some RandomBytesGenerator) {
        try! self.init(seed: SecureBytes(count: Self.seedLength, using: &generator))
    }

    /// The key pair for a 32-byte seed.
    public init(seed: SecureBytes) throws {
        guard seed.count == Self.seedLength else {
            throw CryptoError.invalidLength(what: "Ed25519 seed", expected: Self.seedLength, actual: seed.count)
        }
        Sodium.initialize()
        var publicBytes = [UInt8](repeating: 0, count: Ed25519PublicKey.length)
        expanded = seed.withUnsafeBytes { seedBytes in
            SecureBytes(count: 64) { out in
                publicBytes.withUnsafeMutableBytes { pk in
                    Sodium.check(
                        crypto_sign_seed_keypair(pk.mutableBytePointer, out.mutableBytePointer, seedBytes.bytePointer),
                        "crypto_sign_seed_keypair")
                }
            }
        }
        self.seed = seed
        self.publicKey = try Ed25519PublicKey(bytes: publicBytes)
    }

    /// Copies a 32-byte seed.
    public init(seedBytes: some Collection<UInt8>) throws {
        try self.init(seed: SecureBytes(seedBytes))
    }

    /// The deterministic 64-byte signature of `message`.
    public func signature(for message: some Sequence<UInt8>) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Self.signatureLength)
        withContiguousBytes(of: message) { body in
            expanded.withUnsafeBytes { secretKey in
                signature.withUnsafeMutableBytes { out in
                    Sodium.check(
                        crypto_sign_detached(
                            out.mutableBytePointer, nil, body.bytePointer, UInt64(body.count), secretKey.bytePointer),
                        "crypto_sign_detached")
                }
            }
        }
        return signature
    }
}
