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

    /// HMAC-HASH(key, data) per RFC 2104. SHA256 uses libsodium's HMAC; BLAKE2b uses the generic construction
    /// (Noise requires HMAC, not BLAKE2b's native keyed mode).
    func hmac(key: SecureBytes, data: [UInt8]) -> SecureBytes {
        switch self {
        case .sha256:
            var mac = HMACSHA256(key: key)
            mac.update(data)
            return mac.finalize()
        case .blake2b:
            return genericHMAC(key: key, data: data)
        }
    }

    private func genericHMAC(key: SecureBytes, data: [UInt8]) -> SecureBytes {
        // Noise keys are always HASHLEN <= BLOCKLEN bytes, so the key is zero-padded, never hashed first.
        precondition(key.count <= blockLength, "HMAC key longer than the block length")
        var innerPad = [UInt8](repeating: 0x36, count: blockLength)
        var outerPad = [UInt8](repeating: 0x5c, count: blockLength)
        defer {
            innerPad.withUnsafeMutableBytes { zeroize($0) }
            outerPad.withUnsafeMutableBytes { zeroize($0) }
        }
        key.withUnsafeBytes { keyBytes in
            for index in 0..<keyBytes.count {
                innerPad[index] ^= keyBytes[index]
                outerPad[index] ^= keyBytes[index]
            }
        }
        var inner = BLAKE2b.hash(innerPad + data, outputLength: 64)
        defer { inner.withUnsafeMutableBytes { zeroize($0) } }
        var outer = BLAKE2b.hash(outerPad + inner, outputLength: 64)
        defer { outer.withUnsafeMutableBytes { zeroize($0) } }
        return SecureBytes(outer)
    }

    /// Noise's HKDF(chaining key, input key material, n): returns `n` (2 or 3) outputs of HASHLEN bytes.
    func hkdf(chainingKey: SecureBytes, inputKeyMaterial: SecureBytes, outputs: Int) -> [SecureBytes] {
        let ikm = inputKeyMaterial.copyToArray()
        let temporaryKey = hmac(key: chainingKey, data: ikm)
        var results: [SecureBytes] = []
        var previous: [UInt8] = []
        for counter in 1...outputs {
            let output = hmac(key: temporaryKey, data: previous + [UInt8(counter)])
            previous = output.copyToArray()
            results.append(output)
        }
        previous.withUnsafeMutableBytes { zeroize($0) }
        return results
    }
}
