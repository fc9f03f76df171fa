/// A node's long-term identity: an Ed25519 signing key (who it is; signs roster changes and manifests) and a
/// separate X25519 static key (what it uses in Noise handshakes), tied together by an Ed25519 signature over the
/// X25519 public key.
///
/// Keeping the two keys separate avoids reusing one secret across signature and Diffie-Hellman schemes; the binding
/// signature lets any peer check that a Noise static key belongs to a signing identity.
public struct Identity: Sendable {
    /// Domain separation for the binding signature, so it can never be confused with any other signed message.
    static let bindingContext: [UInt8] = Array("huddle identity binding v1".utf8)

    /// The signing key.
    public let signingKey: Ed25519PrivateKey
    /// The Noise static key.
    public let agreementKey: X25519PrivateKey
    /// The public half, including the binding signature.
    public let publicIdentity: PublicIdentity

    /// A fresh identity from `generator`.
    public init(using generator: inout some RandomBytesGenerator) {
        let signing = Ed25519PrivateKey(using: &generator)
        let agreement = X25519PrivateKey(using: &generator)
        self.init(signingKey: signing, agreementKey: agreement)
    }

    /// An identity from existing keys; computes the binding signature.
    public init(signingKey: Ed25519PrivateKey, agreementKey: X25519PrivateKey) {
        let binding = signingKey.signature(for: Self.bindingContext + agreementKey.publicKey.bytes)
        self.signingKey = signingKey
        self.agreementKey = agreementKey
        self.publicIdentity = PublicIdentity(
            signingKey: signingKey.publicKey, agreementKey: agreementKey.publicKey, binding: binding)
    }

    /// An identity whose keys are derived from one 32-byte seed (signing seed and X25519 scalar are independent
    /// `crypto_kdf` sub-keys). Useful for reproducible test identities.
    public init(seed: SecureBytes) throws {
        let context = try KeyDerivation.Context("hdl-iden")
        let signingSeed = try KeyDerivation.deriveSubkey(from: seed, id: 1, context: context)
        let agreementSecret = try KeyDerivation.deriveSubkey(from: seed, id: 2, context: context)
        try self.init(
            signingKey: Ed25519PrivateKey(seed: signingSeed), agreementKey: X25519PrivateKey(secret: agreementSecret))
    }
}

/// The public half of an ``Identity``: what peers learn and store.
public struct PublicIdentity: Hashable, Sendable {
    /// The Ed25519 identity key.
    public let signingKey: Ed25519PublicKey
    /// The X25519 Noise static key.
    public let agreementKey: X25519PublicKey
    /// Ed25519 signature by `signingKey` over the binding context and `agreementKey`.
    public let binding: [UInt8]

    /// Assembles a public identity. Use ``hasValidBinding`` before trusting it.
    public init(signingKey: Ed25519PublicKey, agreementKey: X25519PublicKey, binding: [UInt8]) {
        self.signingKey = signingKey
        self.agreementKey = agreementKey
        self.binding = binding
    }

    /// Whether `binding` proves that `signingKey` vouches for `agreementKey`.
    public var hasValidBinding: Bool {
        signingKey.isValidSignature(binding, for: Identity.bindingContext + agreementKey.bytes)
    }

    /// A short, human-comparable fingerprint of the signing key (``Ed25519PublicKey/fingerprint``).
    public var fingerprint: String { signingKey.fingerprint }
}

extension Ed25519PublicKey {
    /// A short, human-comparable fingerprint: the first 16 bytes of BLAKE2b-256 over the key, as eight
    /// dash-separated groups of four hex digits. It identifies a member across sessions.
    public var fingerprint: String {
        let digest = BLAKE2b.hash(bytes, outputLength: 32)
        // Written byte by byte: formatting with `String(_:radix:)` and `joined` cost several microseconds.
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 39) { text in
            digits.withUTF8Buffer { hex in
                var position = 0
                for index in 0..<16 {
                    if index > 0 && index % 2 == 0 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = hex[Int(digest[index] >> 4)]
                    text[position + 1] = hex[Int(digest[index] & 0x0F)]
                    position += 2
                }
                return position
            }
        }
    }
}
