import CSodium

/// XChaCha20-Poly1305 AEAD through libsodium: a 192-bit nonce, large enough to choose at random.
public enum XChaChaPoly {
    /// Nonce length in bytes.
    public static let nonceLength = 24
    /// Authentication tag length in bytes.
    public static let tagLength = 16

    /// Encrypts under an explicit 24-byte nonce; returns ciphertext followed by the tag.
    public static func seal(
        _ plaintext: some Sequence<UInt8>, nonce: some Collection<UInt8>,
        authenticating associatedData: some Sequence<UInt8>, key: SymmetricKey
    ) throws -> [UInt8] {
        let nonceBytes = try checkedNonce(nonce)
        Sodium.initialize()
        return withContiguousBytes(of: plaintext) { message in
            withContiguousBytes(of: associatedData) { ad in
                var output = [UInt8](repeating: 0, count: message.count + tagLength)
                key.withUnsafeKeyPointer { keyPointer in
                    output.withUnsafeMutableBytes { out in
                        Sodium.check(
                            crypto_aead_xchacha20poly1305_ietf_encrypt(
                                out.mutableBytePointer, nil, message.bytePointer, UInt64(message.count), ad.bytePointer,
                                UInt64(ad.count), nil, nonceBytes, keyPointer),
                            "crypto_aead_xchacha20poly1305_ietf_encrypt")
                    }
                }
                return output
            }
        }
    }

    /// Encrypts under a fresh random nonce from `generator`; returns `nonce || ciphertext || tag`.
    public static func seal(
        _ plaintext: some Sequence<UInt8>, authenticating associatedData: some Sequence<UInt8>, key: SymmetricKey,
        using generator: inout some RandomBytesGenerator
    ) -> [UInt8] {
        let nonce = generator.bytes(count: nonceLength)
        // The nonce has the right length by construction.
        return nonce + (try! seal(plaintext, nonce: nonce, authenticating: associatedData, key: key))
    }

    /// Verifies and decrypts under an explicit nonce.
    public static func open(
        _ ciphertext: some Sequence<UInt8>, nonce: some Collection<UInt8>,
        authenticating associatedData: some Sequence<UInt8>, key: SymmetricKey
    ) throws -> [UInt8] {
        let nonceBytes = try checkedNonce(nonce)
        Sodium.initialize()
        return try withContiguousBytes(of: ciphertext) { sealed in
            guard sealed.count >= tagLength else { throw CryptoError.authenticationFailed }
            return try withContiguousBytes(of: associatedData) { ad in
                var output = [UInt8](repeating: 0, count: sealed.count - tagLength)
                let status = key.withUnsafeKeyPointer { keyPointer in
                    output.withUnsafeMutableBytes { out in
                        crypto_aead_xchacha20poly1305_ietf_decrypt(
                            out.mutableBytePointer, nil, nil, sealed.bytePointer, UInt64(sealed.count), ad.bytePointer,
                            UInt64(ad.count), nonceBytes, keyPointer)
                    }
                }
                guard status == 0 else { throw CryptoError.authenticationFailed }
                return output
            }
        }
    }

    /// Verifies and decrypts `nonce || ciphertext || tag` as produced by the random-nonce ``seal(_:authenticating:key:using:)``.
    public static func open(
        nonceAndCiphertext: some Collection<UInt8>, authenticating associatedData: some Sequence<UInt8>,
        key: SymmetricKey
    ) throws -> [UInt8] {
        let bytes = Array(nonceAndCiphertext)
        guard bytes.count >= nonceLength + tagLength else { throw CryptoError.authenticationFailed }
        return try open(bytes[nonceLength...], nonce: bytes[0..<nonceLength], authenticating: associatedData, key: key)
    }

    private static func checkedNonce(_ nonce: some Collection<UInt8>) throws -> [UInt8] {
        let bytes = Array(nonce)
        guard bytes.count == nonceLength else {
            throw CryptoError.invalidLength(
                what: "XChaCha20-Poly1305 nonce", expected: nonceLength, actual: bytes.count)
        }
        return bytes
    }
}
