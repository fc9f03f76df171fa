import CSodium

/// BLAKE2b (RFC 7693) through libsodium's `crypto_generichash`, keyed or unkeyed, one-shot or incremental.
///
/// Output lengths run from 16 to 64 bytes; keys, when given, from 16 to 64 bytes. An incremental hasher is a value
/// type with copy-on-write state, so copying it forks the computation.
public struct BLAKE2b: Sendable {
    /// Allowed output lengths in bytes.
    public static let outputLengths = 16...64
    /// Allowed key lengths in bytes (an empty key means unkeyed).
    public static let keyLengths = 16...64

    private var state: HashState
    private let outputLength: Int

    /// Starts an incremental hash producing `outputLength` bytes, keyed by `key` when it is non-empty.
    public init(outputLength: Int = 32, key: some Collection<UInt8> = [UInt8]()) throws {
        try Self.check(outputLength: outputLength, keyLength: key.count)
        Sodium.initialize()
        self.outputLength = outputLength
        self.state = HashState(byteCount: crypto_generichash_statebytes())
        let status = withContiguousBytes(of: key) { keyBytes in
            crypto_generichash_init(
                state.opaque, keyBytes.count == 0 ? nil : keyBytes.bytePointer, keyBytes.count, outputLength)
        }
        precondition(status == 0, "crypto_generichash_init rejected checked parameters")
    }

    /// Starts an incremental hash keyed by secret key material.
    public init(outputLength: Int = 32, key: SecureBytes) throws {
        try Self.check(outputLength: outputLength, keyLength: key.count)
        Sodium.initialize()
        self.outputLength = outputLength
        self.state = HashState(byteCount: crypto_generichash_statebytes())
        let status = key.withUnsafeBytes { keyBytes in
            crypto_generichash_init(state.opaque, keyBytes.bytePointer, keyBytes.count, outputLength)
        }
        precondition(status == 0, "crypto_generichash_init rejected checked parameters")
    }

    /// Absorbs `bytes`.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        withContiguousBytes(of: bytes) { update($0) }
    }

    /// Absorbs the bytes of a raw buffer.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if !isKnownUniquelyReferenced(&state) { state = state.copy() }
        Sodium.check(
            crypto_generichash_update(state.opaque, bytes.bytePointer, UInt64(bytes.count)), "crypto_generichash_update"
        )
    }

    /// Returns the digest. Finalising consumes the hasher: libsodium wipes the state, so it cannot be reused.
    public consuming func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: outputLength)
        digest.withUnsafeMutableBytes { finalize(into: $0) }
        return digest
    }

    /// Returns the digest in wiped memory, for digests that are keys (HMAC-BLAKE2b inside Noise).
    consuming func finalizeSecret() -> SecureBytes {
        SecureBytes(count: outputLength) { finalize(into: $0) }
    }

    private mutating func finalize(into output: UnsafeMutableRawBufferPointer) {
        if !isKnownUniquelyReferenced(&state) { state = state.copy() }
        let status = crypto_generichash_final(state.opaque, output.mutableBytePointer, output.count)
        precondition(status == 0, "crypto_generichash_final failed on a checked, unfinalised state")
    }

    /// Hashes `bytes` in one call. `outputLength` must be in ``outputLengths``; traps otherwise, since a wrong
    /// constant length is a programming error.
    public static func hash(_ bytes: some Sequence<UInt8>, outputLength: Int = 32) -> [UInt8] {
        precondition(outputLengths.contains(outputLength), "BLAKE2b output length must be 16...64")
        Sodium.initialize()
        var digest = [UInt8](repeating: 0, count: outputLength)
        withContiguousBytes(of: bytes) { input in
            digest.withUnsafeMutableBytes { out in
                Sodium.check(
                    crypto_generichash(
                        out.mutableBytePointer, outputLength, input.bytePointer, UInt64(input.count), nil, 0),
                    "crypto_generichash")
            }
        }
        return digest
    }

    /// Keyed BLAKE2b of `bytes` in one call (a MAC when the key is secret).
    public static func hash(
        _ bytes: some Sequence<UInt8>, outputLength: Int = 32, key: some Collection<UInt8>
    ) throws -> [UInt8] {
        var hasher = try BLAKE2b(outputLength: outputLength, key: key)
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Keyed BLAKE2b of a raw buffer into a caller-provided output buffer, without allocating. Used on hot paths
    /// (e.g. `mac1`). `output.count` must be in ``outputLengths`` and `key.count` in ``keyLengths``.
    public static func hash(
        _ bytes: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws {
        try check(outputLength: output.count, keyLength: key.count)
        Sodium.initialize()
        Sodium.check(
            crypto_generichash(
                output.mutableBytePointer, output.count, bytes.bytePointer, UInt64(bytes.count), key.bytePointer,
                key.count), "crypto_generichash")
    }

    private static func check(outputLength: Int, keyLength: Int) throws {
        guard outputLengths.contains(outputLength) else {
            throw CryptoError.outputLengthOutOfRange(what: "BLAKE2b", requested: outputLength, allowed: outputLengths)
        }
        guard keyLength == 0 || keyLengths.contains(keyLength) else {
            throw CryptoError.outputLengthOutOfRange(what: "BLAKE2b key", requested: keyLength, allowed: keyLengths)
        }
    }
}
