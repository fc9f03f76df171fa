import HuddleCrypto
import HuddleProtocol

/// Who created a session and who may remove its members, signed by the creator (PROTOCOL.md §8.2, CHARTER).
///
/// The session's id is bound to its creator: it is the first 16 bytes of BLAKE2b-256 over
/// `"huddle session id v1" || creator signing key || nonce`, so nobody else can present a valid charter for it (that
/// would take a second preimage of the id), and every ticket, which names the id, names its creator implicitly. The
/// creator signs the removal policy; every member checks both before it takes the charter.
public struct SessionCharter: Sendable, Hashable {
    /// Who may remove a member.
    public enum RemovalPolicy: UInt8, Sendable, Hashable {
        /// Only the session's creator.
        case creatorOnly = 0
        /// Any member.
        case anyMember = 1
    }

    /// The nonce's length in bytes.
    public static let nonceLength = 16
    /// Domain separation for the session id's derivation.
    static let idContext = Array("huddle session id v1".utf8)
    /// Domain separation for the creator's signature.
    static let signingContext = Array("huddle charter v1".utf8)

    /// The creator's signing key.
    public let creator: Ed25519PublicKey
    /// The 16 random bytes the session id was derived from.
    public let nonce: [UInt8]
    /// Who may remove members.
    public let policy: RemovalPolicy
    /// The creator's Ed25519 signature over ``signedBytes(session:policy:)``.
    public let signature: [UInt8]

    /// A charter with its parts (checked by ``isValid(for:)``, not here).
    public init(creator: Ed25519PublicKey, nonce: [UInt8], policy: RemovalPolicy, signature: [UInt8]) {
        self.creator = creator
        self.nonce = nonce
        self.policy = policy
        self.signature = signature
    }

    /// A new session's charter, signed with the creator's `signingKey`; its id is ``sessionID(creator:nonce:)``.
    public init(signingKey: Ed25519PrivateKey, nonce: [UInt8], policy: RemovalPolicy) {
        let creator = signingKey.publicKey
        let session = Self.sessionID(creator: creator, nonce: nonce)
        self.init(
            creator: creator, nonce: nonce, policy: policy,
            signature: signingKey.signature(for: Self.signedBytes(session: session, policy: policy)))
    }

    /// The session id a creator's `nonce` gives.
    public static func sessionID(creator: Ed25519PublicKey, nonce: [UInt8]) -> SessionID {
        SessionID(bytes: BLAKE2b.hash(idContext + creator.bytes + nonce, outputLength: 32).prefix(SessionID.length))!
    }

    /// What the creator signs: `"huddle charter v1" || session id || policy (u8)`.
    public static func signedBytes(session: SessionID, policy: RemovalPolicy) -> [UInt8] {
        signingContext + session.bytes + [policy.rawValue]
    }

    /// The id of the session this charter creates.
    public var session: SessionID { Self.sessionID(creator: creator, nonce: nonce) }

    /// Whether the charter is `session`'s: the id derives from the creator and nonce, and the creator signed the
    /// policy.
    public func isValid(for session: SessionID) -> Bool {
        nonce.count == Self.nonceLength && signature.count == Ed25519PrivateKey.signatureLength
            && self.session == session
            && creator.isValidSignature(signature, for: Self.signedBytes(session: session, policy: policy))
    }

    /// Whether the member with signing key `author` may remove others.
    public func permitsRemoval(by author: Ed25519PublicKey) -> Bool {
        policy == .anyMember || author == creator
    }
}
