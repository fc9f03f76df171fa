import CSodium

/// An X25519 public key (RFC 7748): 32 bytes. Public keys are not secret, so plain equality is fine.
public struct X25519PublicKey: Hashable, Sendable {
    /// Key length in bytes.
    public static let length = 32
    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// Wraps 32 bytes. Throws for any other length. Low-order points are accepted here and rejected when used,
    /// by ``X25519PrivateKey/sharedSecret(with:)``.
    public init(bytes: some Collection<UInt8>) throws {
        let array = Array(bytes)
        guard array.count == Self.length else {
            throw CryptoError.invalidLength(what: "X25519 public key", expected: Self.length, actual: array.count)
        }
        self.bytes = array
    }

    /// Hashes the 32 bytes in one go (the synthesized conformance feeds the hasher byte by byte, and keys are hashed
    /// for every message routed by peer).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// An X25519 private key, wiped when released.
public struct X25519PrivateKey: Sendable {
    /// Key length in bytes.
    public static let length = 32
    /// The secret scalar.
    public let secret: SecureBytes
    /// The matching public key.
    public let publicKey: X25519PublicKey

    /// A fresh key pair from `generator`.
    public init(using generator: inout some RandomBytesGenerator) {
        // 32 random bytes are always a valid X25519 scalar (clamping happens inside scalarmult).
        try! self.init(secret: SecureBytes(count: Self.length, using: &generator))
    }

    /// A key pair from a 32-byte secret scalar.
    public init(secret: SecureBytes) throws {
        guard secret.count == Self.length else {
            throw CryptoError.invalidLength(what: "X25519 private key", expected: Self.length, actual: secret.count)
        }
        Sodium.initialize()
        self.secret = secret
        var publicBytes = [UInt8](repeating: 0, count: X25519PublicKey.length)
        secret.withUnsafeBytes { scalar in
            publicBytes.withUnsafeMutableBytes { out in
                Sodium.check(
                    crypto_scalarmult_base(out.mutableBytePointer, scalar.bytePointer), "crypto_scalarmult_base")
            }
        }
        self.publicKey = try X25519PublicKey(bytes: publicBytes)
    }

    /// Copies a 32-byte secret scalar.
    public init(secretBytes: some Collection<UInt8>) throws {
        try self.init(secret: SecureBytes(secretBytes))
    }

    /// The Diffie-Hellman shared secret with `peer`. Throws ``CryptoError/lowOrderPoint`` when the result is all
    /// zeros, which happens exactly when `peer` is a low-order point: the handshake must then be aborted.
    public func sharedSecret(with peer: X25519PublicKey) throws -> SecureBytes {
        var failed = false
        let shared = secret.withUnsafeBytes { scalar in
            peer.bytes.withUnsafeBytes { point in
                SecureBytes(count: 32) { out in
                    // libsodium returns -1 when the output is all zeros (low-order input).
                    failed = crypto_scalarmult(out.mutableBytePointer, scalar.bytePointer, point.bytePointer) != 0
                }
            }
        }
        guard !failed, !shared.isAllZero else { throw CryptoError.lowOrderPoint }
        return shared
    }
}
