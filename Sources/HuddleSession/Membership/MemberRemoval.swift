import HuddleCrypto
import HuddleProtocol

/// A member's removal from a session, signed by the member who removed it (PROTOCOL.md §8.2, MEMBER_REMOVED). Being
/// signed, it may be relayed: every member checks the author's signature and the charter's policy itself.
public struct MemberRemoval: Sendable, Hashable {
    /// Domain separation for the author's signature.
    static let signingContext = Array("huddle member removed v1".utf8)

    /// The signing key of the member who removed it.
    public let author: Ed25519PublicKey
    /// The removed member's signing key.
    public let removed: Ed25519PublicKey
    /// The author's signature over ``signedBytes(session:author:removed:)``.
    public let signature: [UInt8]

    /// A removal with its parts (checked by ``isValid(for:)``, not here).
    public init(author: Ed25519PublicKey, removed: Ed25519PublicKey, signature: [UInt8]) {
        self.author = author
        self.removed = removed
        self.signature = signature
    }

    /// A removal of `removed` from `session`, signed with the author's `signingKey`.
    public init(session: SessionID, removing removed: Ed25519PublicKey, signingKey: Ed25519PrivateKey) {
        let author = signingKey.publicKey
        self.init(
            author: author, removed: removed,
            signature: signingKey.signature(for: Self.signedBytes(session: session, author: author, removed: removed)))
    }

    /// What the author signs: `"huddle member removed v1" || session id || author key || removed key`.
    public static func signedBytes(session: SessionID, author: Ed25519PublicKey, removed: Ed25519PublicKey) -> [UInt8] {
        signingContext + session.bytes + author.bytes + removed.bytes
    }

    /// Whether the author signed this removal from `session`.
    public func isValid(for session: SessionID) -> Bool {
        signature.count == Ed25519PrivateKey.signatureLength
            && author.isValidSignature(
                signature, for: Self.signedBytes(session: session, author: author, removed: removed))
    }
}
