import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// A person's device in a session. Two `Participant` values are equal when they are the same member identity; the
/// name is what that member chose to be called.
public struct Participant: Hashable, Sendable, Identifiable, CustomStringConvertible {
    /// The member's identifier: its identity fingerprint, stable across sessions.
    public let id: String
    /// The member's display name.
    public let name: String
    let staticKey: X25519PublicKey
    /// The identity's signing key (`nil` for test participants), to tell a cached participant still matches.
    let signingKey: Ed25519PublicKey?
    /// What ``hash(into:)`` feeds the hasher: up to the first eight bytes of ``id`` (a fingerprint's leading hex
    /// digits, as random as its digest), so hashing a participant (every send looks its recipients up in sets) costs
    /// one integer, not the 39-character string.
    private let hashPrefix: UInt64

    init(_ record: MemberRecord) {
        self.init(
            id: record.identity.fingerprint, name: record.name, staticKey: record.staticKey,
            signingKey: record.identity.signingKey)
    }

    private init(id: String, name: String, staticKey: X25519PublicKey, signingKey: Ed25519PublicKey?) {
        self.id = id
        self.name = name
        self.staticKey = staticKey
        self.signingKey = signingKey
        hashPrefix = id.utf8.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A participant from its parts (tests).
    init(id: String, name: String, staticKeyBytes: [UInt8]) {
        // 32 bytes is the only requirement of the key type.
        self.init(id: id, name: name, staticKey: try! X25519PublicKey(bytes: staticKeyBytes), signingKey: nil)
    }

    public static func == (lhs: Participant, rhs: Participant) -> Bool { lhs.id == rhs.id }
    // Equal participants have equal ids, so equal prefixes: consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(hashPrefix) }

    public var description: String { name.isEmpty ? id : "\(name) (\(id.prefix(9)))" }
}
