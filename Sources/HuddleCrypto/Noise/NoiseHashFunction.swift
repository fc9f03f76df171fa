/// The hash functions Noise handshakes can use here: SHA256 (Huddle's choice) and BLAKE2b (for the vector suite
/// and peers that prefer it).
public enum NoiseHashFunction: String, Sendable, CaseIterable {
    /// SHA-256: HASHLEN 32, BLOCKLEN 64.
    case sha256 = "SHA256"
    /// BLAKE2b-512: HASHLEN 64, BLOCKLEN 128.
    case blake2b = "BLAKE2b"

    /// HASHLEN in the Noise specification.
    public var hashLength: Int {
        switch self {
        case .sha256: return 32
        case .blake2b: return 64
        }
    }

    /// BLOCKLEN in the Noise specification.
    public var blockLength: Int {
        switch self {
        case .sha256: return 64
        case .blake2b: return 128
        }
    }

    /// HASH(data).
    public func hash(_ data: some Sequence<UInt8>) -> [UInt8] {
        switch self {
        case .sha256: return SHA256.hash(data)
        case .blake2b: return BLAKE2b.hash(data, outputLength: 64)
        }
    }

    /// HMAC-HASH(key, parts...) per RFC 2104 over the concatenation of `parts`. SHA256 uses libsodium's HMAC;
    /// BLAKE2b uses the generic construction (Noise requires HMAC, not BLAKE2b's native keyed mode). Key-derived
    /// intermediate values stay in wiped buffers.
    func hmac(key: SecureBytes, _ parts: UnsafeRawBufferPointer...) -> SecureBytes {
        switch self {
        case .sha256:
            var mac = HMACSHA256(key: key)
            for part in parts { mac.update(part) }
            return mac.finalize()
        case .blake2b:
            // Noise keys are always HASHLEN <= BLOCKLEN bytes, so the key is zero-padded, never hashed first.
            precondition(key.count <= blockLength, "HMAC key longer than the block length")
            let innerPad = pad(key: key, with: 0x36)
            let outerPad = pad(key: key, with: 0x5c)
            var inner = try! BLAKE2b(outputLength: 64)
            innerPad.withUnsafeBytes { inner.update($0) }
            for part in parts { inner.update(part) }
            let innerDigest = inner.finalizeSecret()
            var outer = try! BLAKE2b(outputLength: 64)
            outerPad.withUnsafeBytes { outer.update($0) }
            innerDigest.withUnsafeBytes { outer.update($0) }
            return outer.finalizeSecret()
        }
    }

    /// The key zero-padded to the block length and XORed with `byte`, in a wiped buffer.
    private func pad(key: SecureBytes, with byte: UInt8) -> SecureBytes {
        SecureBytes(count: blockLength) { padded in
            key.withUnsafeBytes { keyBytes in
                for index in 0..<blockLength {
                    padded[index] = (index < keyBytes.count ? keyBytes[index] : 0) ^ byte
                }
            }
        }
    }

    /// Noise's HKDF(chaining key, input key material, n): returns `n` (2 or 3) outputs of HASHLEN bytes.
    func hkdf(chainingKey: SecureBytes, inputKeyMaterial: SecureBytes, outputs: Int) -> [SecureBytes] {
        let temporaryKey = inputKeyMaterial.withUnsafeBytes { hmac(key: chainingKey, $0) }
        var results: [SecureBytes] = []
        for counter in 1...outputs {
            var counterByte = UInt8(counter)
            let output = withUnsafeBytes(of: &counterByte) { counterBytes in
                if let previous = results.last {
                    return previous.withUnsafeBytes { hmac(key: temporaryKey, $0, counterBytes) }
                }
                return hmac(key: temporaryKey, counterBytes)
            }
            results.append(output)
        }
        return results
    }
}
