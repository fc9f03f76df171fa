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

    init(_ record: MemberRecord) {
        id = record.identity.fingerprint
        name = record.name
        staticKey = record.staticKey
        signingKey = record.identity.signingKey
    }

    /// A participant from its parts (tests).
    init(id: String, name: String, staticKeyBytes: [UInt8]) {
        self.id = id
        self.name = name
        // 32 bytes is the only requirement of the key type.
        self.staticKey = try! X25519PublicKey(bytes: staticKeyBytes)
        self.signingKey = nil
    }

    public static func == (lhs: Participant, rhs: Participant) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var description: String { name.isEmpty ? id : "\(name) (\(id.prefix(9)))" }
}
