/// HKDF (RFC 5869) with HMAC-SHA-256. libsodium 1.0.18 has no HKDF, so it is built here on ``HMACSHA256`` and
/// checked against the RFC 5869 vectors.
public enum HKDF {
    /// The largest output `expand` can produce: 255 blocks of 32 bytes.
    public static let maximumOutputLength = 255 * HMACSHA256.outputLength

    /// HKDF-Extract: the pseudorandom key `HMAC(salt, ikm)`. An empty salt means 32 zero bytes, per the RFC.
    public static func extract(salt: some Sequence<UInt8>, inputKeyMaterial: some Sequence<UInt8>) -> SecureBytes {
        var mac = extractor(salt: salt)
        mac.update(inputKeyMaterial)
        return mac.finalize()
    }

    /// HKDF-Extract with secret input keying material.
    public static func extract(salt: some Sequence<UInt8>, inputKeyMaterial: SecureBytes) -> SecureBytes {
        var mac = extractor(salt: salt)
        inputKeyMaterial.withUnsafeBytes { mac.update($0) }
        return mac.finalize()
    }

    /// The HMAC keyed by `salt`, or by HashLen zero bytes when the salt is empty (RFC 5869 §2.2).
    private static func extractor(salt: some Sequence<UInt8>) -> HMACSHA256 {
        let saltBytes = Array(salt)
        return HMACSHA256(key: saltBytes.isEmpty ? [UInt8](repeating: 0, count: HMACSHA256.outputLength) : saltBytes)
    }

    /// HKDF-Expand: `outputLength` bytes from a pseudorandom key and context `info`.
    public static func expand(
        pseudoRandomKey: SecureBytes, info: some Sequence<UInt8>, outputLength: Int
    ) throws -> SecureBytes {
        guard (0...maximumOutputLength).contains(outputLength) else {
            throw CryptoError.outputLengthOutOfRange(
                what: "HKDF-Expand", requested: outputLength, allowed: 0...maximumOutputLength)
        }
        let infoBytes = Array(info)
        return SecureBytes(count: outputLength) { output in
            var previous: SecureBytes? = nil
            var written = 0
            var counter: UInt8 = 1
            while written < outputLength {
                var mac = HMACSHA256(key: pseudoRandomKey)
                previous?.withUnsafeBytes { mac.update($0) }
                mac.update(infoBytes)
                mac.update(CollectionOfOne(counter))
                let block = mac.finalize()
                let take = min(block.count, outputLength - written)
                block.withUnsafeBytes { blockBytes in
                    UnsafeMutableRawBufferPointer(rebasing: output[written..<(written + take)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: blockBytes[0..<take]))
                }
                written += take
                counter &+= 1
                previous = block
            }
        }
    }

    /// Extract then expand in one call.
    public static func deriveKey(
        inputKeyMaterial: some Sequence<UInt8>, salt: some Sequence<UInt8>, info: some Sequence<UInt8>,
        outputLength: Int
    ) throws -> SecureBytes {
        let prk = extract(salt: salt, inputKeyMaterial: inputKeyMaterial)
        return try expand(pseudoRandomKey: prk, info: info, outputLength: outputLength)
    }
}
