import CSodium

/// HMAC-SHA-256 (RFC 2104 / RFC 4231) through libsodium's `crypto_auth_hmacsha256`, for keys of any length.
///
/// Verify tags with ``isValidAuthenticationCode(_:for:key:)``, which compares in constant time.
public struct HMACSHA256: Sendable {
    /// The tag length in bytes.
    public static let outputLength = 32

    private var state: HashState

    /// Starts an incremental MAC under `key` (any length; keys longer than 64 bytes are hashed first, per RFC 2104).
    public init(key: some Sequence<UInt8>) {
        Sodium.initialize()
        state = HashState(byteCount: crypto_auth_hmacsha256_statebytes())
        withContiguousBytes(of: key) { keyBytes in
            Sodium.check(
                crypto_auth_hmacsha256_init(
                    state.pointer(to: crypto_auth_hmacsha256_state.self), keyBytes.bytePointer, keyBytes.count),
                "crypto_auth_hmacsha256_init")
        }
    }

    /// Starts an incremental MAC under secret key material.
    public init(key: SecureBytes) {
        Sodium.initialize()
        state = HashState(byteCount: crypto_auth_hmacsha256_statebytes())
        key.withUnsafeBytes { keyBytes in
            Sodium.check(
                crypto_auth_hmacsha256_init(
                    state.pointer(to: crypto_auth_hmacsha256_state.self), keyBytes.bytePointer, keyBytes.count),
                "crypto_auth_hmacsha256_init")
        }
    }

    /// Absorbs `bytes`.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        withContiguousBytes(of: bytes) { update($0) }
    }

    /// Absorbs a raw buffer.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if !isKnownUniquelyReferenced(&state) { state = state.copy() }
        Sodium.check(
            crypto_auth_hmacsha256_update(
                state.pointer(to: crypto_auth_hmacsha256_state.self), bytes.bytePointer, UInt64(bytes.count)),
            "crypto_auth_hmacsha256_update")
    }

    /// Returns the 32-byte tag as secret bytes (HMAC outputs are often keys: HKDF, Noise). Finalising consumes the
    /// MAC (libsodium wipes the state).
    public consuming func finalize() -> SecureBytes {
        if !isKnownUniquelyReferenced(&state) { state = state.copy() }
        return SecureBytes(count: Self.outputLength) { out in
            Sodium.check(
                crypto_auth_hmacsha256_final(
                    state.pointer(to: crypto_auth_hmacsha256_state.self), out.mutableBytePointer),
                "crypto_auth_hmacsha256_final")
        }
    }

    /// The HMAC-SHA-256 tag of `message` under `key`.
    public static func authenticationCode(for message: some Sequence<UInt8>, key: some Sequence<UInt8>) -> SecureBytes {
        var mac = HMACSHA256(key: key)
        mac.update(message)
        return mac.finalize()
    }

    /// Whether `code` is the tag of `message` under `key`, compared in constant time.
    public static func isValidAuthenticationCode(
        _ code: some Sequence<UInt8>, for message: some Sequence<UInt8>, key: some Sequence<UInt8>
    ) -> Bool {
        let expected = authenticationCode(for: message, key: key)
        return withContiguousBytes(of: code) { expected.constantTimeEquals($0) }
    }
}
