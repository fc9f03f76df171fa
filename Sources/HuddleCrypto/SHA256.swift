import CSodium

/// SHA-256 (FIPS 180-4) through libsodium, one-shot or incremental.
public struct SHA256: Sendable {
    /// The digest length in bytes.
    public static let digestLength = 32
    /// The block length in bytes.
    public static let blockLength = 64

    private var state: HashState

    /// Starts an incremental hash.
    public init() {
        Sodium.initialize()
        state = HashState(byteCount: crypto_hash_sha256_statebytes())
        Sodium.check(
            crypto_hash_sha256_init(state.pointer(to: crypto_hash_sha256_state.self)), "crypto_hash_sha256_init")
    }

    /// Absorbs `bytes`.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        withContiguousBytes(of: bytes) { update($0) }
    }

    /// Absorbs a raw buffer.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if !isKnownUniquelyReferenced(&state) { state = state.copy() }
        Sodium.check(
            crypto_hash_sha256_update(
                state.pointer(to: crypto_hash_sha256_state.self), bytes.bytePointer, UInt64(bytes.count)),
            "crypto_hash_sha256_update")
    }

    /// Returns the 32-byte digest. Finalising consumes the hasher (libsodium wipes the state).
    public consuming func finalize() -> [UInt8] {
        if !isKnownUniquelyReferenced(&state) { state = state.copy() }
        var digest = [UInt8](repeating: 0, count: Self.digestLength)
        digest.withUnsafeMutableBytes { out in
            Sodium.check(
                crypto_hash_sha256_final(state.pointer(to: crypto_hash_sha256_state.self), out.mutableBytePointer),
                "crypto_hash_sha256_final")
        }
        return digest
    }

    /// SHA-256 of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }
}
