import CSodium

/// ChaCha20-Poly1305-IETF (RFC 8439) AEAD through libsodium.
///
/// Huddle's transport nonce is four zero bytes followed by a little-endian 64-bit counter (the packet number), the
/// same layout Noise uses; ``Nonce/init(counter:)`` builds it without allocating. Every function comes in a
/// combined form (ciphertext followed by the 16-byte tag) and a detached form, and the in-place variants encrypt or
/// decrypt inside a buffer the caller owns. `open` either returns authentic plaintext or throws
/// ``CryptoError/authenticationFailed`` and, for in-place calls, leaves the buffer unspecified but never partially
/// trusted.
public enum ChaChaPoly {
    /// Key length in bytes.
    public static let keyLength = 32
    /// Authentication tag length in bytes.
    public static let tagLength = 16
    /// Nonce length in bytes.
    public static let nonceLength = 12

    /// A 96-bit nonce: a 32-bit little-endian prefix and a 64-bit little-endian counter.
    public struct Nonce: Sendable, Hashable {
        /// The first four bytes, as a little-endian integer (zero for counter nonces).
        public var prefix: UInt32
        /// The last eight bytes, as a little-endian integer.
        public var counter: UInt64

        /// The counter nonce `0^4 || LE64(counter)`.
        @inlinable
        public init(counter: UInt64) {
            self.prefix = 0
            self.counter = counter
        }

        /// A nonce from 12 explicit bytes.
        public init(bytes: some Collection<UInt8>) throws {
            let array = Array(bytes)
            guard array.count == ChaChaPoly.nonceLength else {
                throw CryptoError.invalidLength(what: "ChaCha20-Poly1305 nonce", expected: 12, actual: array.count)
            }
            prefix = array[0..<4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
            counter = array[4..<12].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }

        @inlinable
        func withUnsafeNoncePointer<Result>(_ body: (UnsafePointer<UInt8>) throws -> Result) rethrows -> Result {
            // Three UInt32s are laid out as 12 contiguous bytes: prefix, counter low half, counter high half.
            var packed = (
                prefix.littleEndian, UInt32(truncatingIfNeeded: counter).littleEndian,
                UInt32(truncatingIfNeeded: counter >> 32).littleEndian
            )
            return try withUnsafeBytes(of: &packed) { try body($0.bindMemory(to: UInt8.self).baseAddress!) }
        }
    }

    /// Encrypts `plaintext` and returns ciphertext followed by the tag.
    public static func seal(
        _ plaintext: some Sequence<UInt8>, nonce: Nonce, authenticating associatedData: some Sequence<UInt8>,
        key: SymmetricKey
    ) -> [UInt8] {
        withContiguousBytes(of: plaintext) { message in
            withContiguousBytes(of: associatedData) { ad in
                var output = [UInt8](repeating: 0, count: message.count + tagLength)
                output.withUnsafeMutableBytes { out in
                    out.copyMemory(from: message)
                    let tagSlot = UnsafeMutableRawBufferPointer(rebasing: out[message.count...])
                    let body = UnsafeMutableRawBufferPointer(rebasing: out[0..<message.count])
                    sealInPlace(body, tag: tagSlot, nonce: nonce, authenticating: ad, key: key)
                }
                return output
            }
        }
    }

    /// Verifies and decrypts `ciphertext` (ciphertext followed by the tag).
    public static func open(
        _ ciphertext: some Sequence<UInt8>, nonce: Nonce, authenticating associatedData: some Sequence<UInt8>,
        key: SymmetricKey
    ) throws -> [UInt8] {
        var buffer = Array(ciphertext)
        let length = try withContiguousBytes(of: associatedData) { ad in
            try buffer.withUnsafeMutableBytes {
                try openInPlace(combined: $0, nonce: nonce, authenticating: ad, key: key)
            }
        }
        buffer.removeLast(buffer.count - length)
        return buffer
    }

    /// Encrypts `buffer` in place and writes the 16-byte tag into `tag` (detached form). Never allocates.
    @inlinable
    public static func sealInPlace(
        _ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer, nonce: Nonce,
        authenticating associatedData: UnsafeRawBufferPointer, key: SymmetricKey
    ) {
        precondition(tag.count == tagLength, "ChaCha20-Poly1305 tag buffer must be 16 bytes")
        Sodium.initialize()
        key.withUnsafeKeyPointer { keyPointer in
            nonce.withUnsafeNoncePointer { noncePointer in
                Sodium.check(
                    crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                        buffer.mutableBytePointer, tag.mutableBytePointer, nil, buffer.mutableBytePointer,
                        UInt64(buffer.count), associatedData.bytePointer, UInt64(associatedData.count), nil,
                        noncePointer,
                        keyPointer), "crypto_aead_chacha20poly1305_ietf_encrypt_detached")
            }
        }
    }

    /// Verifies `tag` and decrypts `buffer` in place (detached form). Never allocates.
    ///
    /// On failure libsodium overwrites `buffer` with zeros (so unauthenticated plaintext is never exposed): a caller
    /// that wants to try another key (e.g. the previous keypair during a rekey) must keep its own copy of the
    /// ciphertext first.
    @inlinable
    public static func openInPlace(
        _ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer, nonce: Nonce,
        authenticating associatedData: UnsafeRawBufferPointer, key: SymmetricKey
    ) throws {
        guard tag.count == tagLength else {
            throw CryptoError.invalidLength(what: "ChaCha20-Poly1305 tag", expected: tagLength, actual: tag.count)
        }
        Sodium.initialize()
        let status = key.withUnsafeKeyPointer { keyPointer in
            nonce.withUnsafeNoncePointer { noncePointer in
                crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                    buffer.mutableBytePointer, nil, buffer.mutableBytePointer, UInt64(buffer.count),
                    tag.bytePointer, associatedData.bytePointer, UInt64(associatedData.count), noncePointer,
                    keyPointer)
            }
        }
        guard status == 0 else { throw CryptoError.authenticationFailed }
    }

    /// Encrypts the first `plaintextLength` bytes of `buffer` in place and writes the tag right after them
    /// (combined form). `buffer` must have room for `plaintextLength + 16` bytes. Returns the sealed length.
    @inlinable
    @discardableResult
    public static func sealInPlace(
        combined buffer: UnsafeMutableRawBufferPointer, plaintextLength: Int, nonce: Nonce,
        authenticating associatedData: UnsafeRawBufferPointer, key: SymmetricKey
    ) -> Int {
        precondition(buffer.count >= plaintextLength + tagLength, "buffer has no room for the tag")
        let body = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<plaintextLength])
        let tag = UnsafeMutableRawBufferPointer(rebasing: buffer[plaintextLength..<(plaintextLength + tagLength)])
        sealInPlace(body, tag: tag, nonce: nonce, authenticating: associatedData, key: key)
        return plaintextLength + tagLength
    }

    /// Verifies and decrypts a combined ciphertext (tag last) in place. Returns the plaintext length, which is
    /// `buffer.count - 16`. Throws ``CryptoError/authenticationFailed`` for forged input, including input shorter
    /// than a tag; the ciphertext part of `buffer` is then zeroed, as with the detached form.
    @inlinable
    public static func openInPlace(
        combined buffer: UnsafeMutableRawBufferPointer, nonce: Nonce,
        authenticating associatedData: UnsafeRawBufferPointer, key: SymmetricKey
    ) throws -> Int {
        guard buffer.count >= tagLength else { throw CryptoError.authenticationFailed }
        let length = buffer.count - tagLength
        let body = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length])
        let tag = UnsafeRawBufferPointer(rebasing: buffer[length...])
        try openInPlace(body, tag: tag, nonce: nonce, authenticating: associatedData, key: key)
        return length
    }
}

extension ChaChaPoly {
    /// Counter-nonce convenience: seals under `0^4 || LE64(counter)`.
    public static func seal(
        _ plaintext: some Sequence<UInt8>, counter: UInt64, authenticating associatedData: some Sequence<UInt8>,
        key: SymmetricKey
    ) -> [UInt8] {
        seal(plaintext, nonce: Nonce(counter: counter), authenticating: associatedData, key: key)
    }

    /// Counter-nonce convenience: opens under `0^4 || LE64(counter)`.
    public static func open(
        _ ciphertext: some Sequence<UInt8>, counter: UInt64, authenticating associatedData: some Sequence<UInt8>,
        key: SymmetricKey
    ) throws -> [UInt8] {
        try open(ciphertext, nonce: Nonce(counter: counter), authenticating: associatedData, key: key)
    }
}
