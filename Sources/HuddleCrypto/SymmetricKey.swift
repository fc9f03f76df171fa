/// A 256-bit secret key for ChaCha20-Poly1305, XChaCha20-Poly1305 and key derivation, wiped when released.
public struct SymmetricKey: Sendable {
    /// Key length in bytes.
    public static let length = 32

    /// The secret bytes.
    public let secret: SecureBytes

    /// Wraps 32 secret bytes. Throws ``CryptoError/invalidLength(what:expected:actual:)`` for any other length.
    public init(_ secret: SecureBytes) throws {
        guard secret.count == Self.length else {
            throw CryptoError.invalidLength(what: "symmetric key", expected: Self.length, actual: secret.count)
        }
        self.secret = secret
    }

    /// Copies 32 key bytes. Throws for any other length.
    public init(bytes: some Collection<UInt8>) throws {
        try self.init(SecureBytes(bytes))
    }

    /// A fresh random key from `generator`.
    public init(using generator: inout some RandomBytesGenerator) {
        secret = SecureBytes(count: Self.length, using: &generator)
    }

    /// Compares two keys in constant time.
    public func constantTimeEquals(_ other: SymmetricKey) -> Bool { secret.constantTimeEquals(other.secret) }

    @inlinable
    func withUnsafeKeyPointer<Result>(_ body: (UnsafePointer<UInt8>) throws -> Result) rethrows -> Result {
        try secret.withUnsafeBytes { try body($0.bytePointer) }
    }
}
