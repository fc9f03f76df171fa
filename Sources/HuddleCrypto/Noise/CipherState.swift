/// Noise's CipherState: a ChaCha20-Poly1305 key and a 64-bit nonce counter.
///
/// With no key, encryption and decryption pass data through unchanged (as the Noise specification requires during
/// the first tokens of a handshake). The nonce advances only after a successful operation; nonce 2^64 - 1 is
/// reserved and never used.
public struct CipherState: Sendable {
    /// The current key, or `nil` before the handshake has mixed one in.
    public private(set) var key: SymmetricKey?
    /// The next nonce to use.
    public private(set) var nonce: UInt64 = 0

    /// A cipher state with `key` (or none) and nonce 0.
    public init(key: SymmetricKey? = nil) {
        self.key = key
    }

    /// Whether a key is set.
    public var hasKey: Bool { key != nil }

    /// EncryptWithAd: seals `plaintext` under the current nonce and advances it.
    public mutating func encrypt(_ plaintext: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce < UInt64.max else { throw CryptoError.nonceExhausted }
        let sealed = ChaChaPoly.seal(plaintext, counter: nonce, authenticating: associatedData, key: key)
        nonce += 1
        return sealed
    }

    /// DecryptWithAd: opens `ciphertext` under the current nonce and advances it only on success.
    public mutating func decrypt(_ ciphertext: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce < UInt64.max else { throw CryptoError.nonceExhausted }
        let plaintext = try ChaChaPoly.open(ciphertext, counter: nonce, authenticating: associatedData, key: key)
        nonce += 1
        return plaintext
    }

    /// Rekey(): replaces the key with the first 32 bytes of ENCRYPT(k, 2^64 - 1, "", zeros(32)); the nonce is kept.
    public mutating func rekey() {
        guard let key else { return }
        var sealed = ChaChaPoly.seal(
            [UInt8](repeating: 0, count: 32), counter: UInt64.max, authenticating: [UInt8](), key: key)
        defer { sealed.withUnsafeMutableBytes { zeroize($0) } }
        self.key = try! SymmetricKey(bytes: sealed[0..<32])
    }
}
