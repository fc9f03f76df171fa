import CSodium

/// Sub-key derivation with libsodium's `crypto_kdf` (BLAKE2b keyed by a master key, with an 8-byte context and a
/// 64-bit sub-key id). Different `(context, id)` pairs give independent keys from one master key.
public enum KeyDerivation {
    /// Allowed sub-key lengths in bytes.
    public static let subkeyLengths = 16...64
    /// Master key length in bytes.
    public static let masterKeyLength = 32

    /// An 8-byte ASCII domain-separation label, fixed per use (e.g. `"hdl-mac1"`).
    public struct Context: Sendable, Hashable {
        /// The eight context bytes.
        public let bytes: [UInt8]

        /// Creates a context from exactly 8 ASCII characters.
        public init(_ label: String) throws {
            let utf8 = Array(label.utf8)
            guard utf8.count == 8, utf8.allSatisfy({ $0 < 0x80 }) else {
                throw CryptoError.invalidLength(what: "KDF context (ASCII)", expected: 8, actual: utf8.count)
            }
            bytes = utf8
        }
    }

    /// Derives sub-key `id` of `length` bytes under `context` from a 32-byte master key.
    public static func deriveSubkey(
        from masterKey: SecureBytes, id: UInt64, context: Context, length: Int = 32
    ) throws -> SecureBytes {
        guard masterKey.count == masterKeyLength else {
            throw CryptoError.invalidLength(what: "KDF master key", expected: masterKeyLength, actual: masterKey.count)
        }
        guard subkeyLengths.contains(length) else {
            throw CryptoError.outputLengthOutOfRange(what: "KDF sub-key", requested: length, allowed: subkeyLengths)
        }
        Sodium.initialize()
        var contextChars = context.bytes.map { CChar(bitPattern: $0) }
        contextChars.append(0)
        return masterKey.withUnsafeBytes { master in
            SecureBytes(count: length) { out in
                Sodium.check(
                    crypto_kdf_derive_from_key(out.mutableBytePointer, length, id, contextChars, master.bytePointer),
                    "crypto_kdf_derive_from_key")
            }
        }
    }
}
