import HuddleCrypto
import HuddleProtocol

/// Who may be inside a session, as one member knows it: the charter (who may remove members), the removals it
/// learned and the identities they shut out, and the current key of the session admission (``AdmissionKey``).
///
/// A sub-machine of ``SessionMembership``. Guarantees:
/// - The first valid charter is kept (only the creator can sign one for the session's id).
/// - A removed identity, by signing key and by Noise key, stays shut out while its removal is remembered: at most
///   ``ProtocolLimits/maxRemovals`` removals, the oldest forgotten first.
/// - A departed identity is remembered (at most ``ProtocolLimits/maxDepartures``) with the admission epoch it left
///   under, so the admission key it kept never lets it back in.
/// - The admission key only moves forward (``AdmissionKey/supersedes(_:)``), so concurrent rotations converge.
struct SessionBoundary: Sendable {
    /// The session's charter, once known.
    var charter: SessionCharter?
    /// The removals learned, oldest first, each with the removed member's Noise key when this node knew it.
    private(set) var removals: [(removal: MemberRemoval, staticKey: X25519PublicKey?)] = []
    /// The current admission key after the first rotation (`nil`: epoch 0, the session secret).
    private(set) var admissionKey: AdmissionKey?
    /// Members that announced their departure, oldest first (at most ``ProtocolLimits/maxDepartures``): each with the
    /// admission epoch it left under, whose key it still holds. Forgotten when the identity is announced again.
    private(set) var departures: [(signingKey: Ed25519PublicKey, admissionEpoch: UInt64)] = []
    /// Invitations a removal closed, oldest first (at most ``ProtocolLimits/maxRevokedInvitations``): they never open
    /// again here, though a member that missed the removal still offers them.
    private(set) var revoked: [AdmissionID] = []

    /// Whether a removal closed invitation `id`.
    func isRevoked(_ id: AdmissionID) -> Bool { revoked.contains(id) }

    /// Remembers that a removal closed invitation `id`.
    mutating func revoke(_ id: AdmissionID) {
        guard !revoked.contains(id) else { return }
        if revoked.count == ProtocolLimits.maxRevokedInvitations { revoked.removeFirst() }
        revoked.append(id)
    }

    /// The current admission epoch (0 before the first rotation).
    var admissionEpoch: UInt64 { admissionKey?.epoch ?? 0 }

    /// Whether the identity with signing key `key` was removed.
    func isRemoved(signing key: Ed25519PublicKey) -> Bool { removals.contains { $0.removal.removed == key } }

    /// Whether the member with Noise key `key` was removed.
    func isRemoved(static key: X25519PublicKey) -> Bool { removals.contains { $0.staticKey == key } }

    /// Whether `record`'s identity was removed (by either of its keys).
    func isRemoved(_ record: MemberRecord) -> Bool {
        isRemoved(signing: record.identity.signingKey) || isRemoved(static: record.staticKey)
    }

    /// Whether exactly `removal` (the same author, removed member and signature bytes) is remembered: it was checked
    /// when it first came.
    func remembers(_ removal: MemberRemoval) -> Bool { removals.contains { $0.removal == removal } }

    /// Records `removal` (of the member with Noise key `staticKey`, when known); `false` when it was known already.
    mutating func remember(_ removal: MemberRemoval, staticKey: X25519PublicKey?) -> Bool {
        guard !isRemoved(signing: removal.removed) else { return false }
        if removals.count == ProtocolLimits.maxRemovals { removals.removeFirst() }
        removals.append((removal, staticKey))
        return true
    }

    /// Remembers that the identity with signing key `key` left under the current admission epoch.
    mutating func rememberDeparture(of key: Ed25519PublicKey) {
        departures.removeAll { $0.signingKey == key }
        if departures.count == ProtocolLimits.maxDepartures { departures.removeFirst() }
        departures.append((key, admissionEpoch))
    }

    /// Forgets the departure of the identity with signing key `key` (it was let in again).
    mutating func forgetDeparture(of key: Ed25519PublicKey) {
        departures.removeAll { $0.signingKey == key }
    }

    /// Whether the identity with signing key `key` left while the admission was at the current epoch: it holds the
    /// current admission key, which must not let it back in.
    func departedUnderCurrentAdmission(_ key: Ed25519PublicKey) -> Bool {
        departures.contains { $0.signingKey == key && $0.admissionEpoch >= admissionEpoch }
    }

    /// Takes `key` if it supersedes the current admission key; `false` otherwise.
    mutating func adopt(_ key: AdmissionKey) -> Bool {
        if let current = admissionKey {
            guard key.supersedes(current) else { return false }
        } else {
            guard key.epoch > 0 else { return false }
        }
        admissionKey = key
        return true
    }
}
