import HuddleCrypto
import HuddleSession

/// Someone asking to join under an ask-to-join invitation (``GroupSession/makeInvitation(validFor:requiresApproval:uses:)``):
/// who they say they are, for a person to decide on with ``GroupSession/admit(_:)`` or ``GroupSession/deny(_:)``.
///
/// The name is the joiner's own choice; the fingerprint is its identity's, which its handshake proved, so two
/// requests with equal fingerprints come from the same device identity whatever name each gives.
public struct JoinRequest: Hashable, Sendable, Identifiable, CustomStringConvertible {
    /// The joiner's identity fingerprint: the same ``Participant/id`` it will have once admitted.
    public let id: String
    /// The display name the joiner gave.
    public let name: String
    let signingKey: Ed25519PublicKey

    init(_ record: MemberRecord) {
        id = record.identity.fingerprint
        name = record.name
        signingKey = record.identity.signingKey
    }

    /// The identity fingerprint (the same as ``id``).
    public var fingerprint: String { id }

    public static func == (lhs: JoinRequest, rhs: JoinRequest) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var description: String { name.isEmpty ? id : "\(name) (\(id.prefix(9)))" }
}
