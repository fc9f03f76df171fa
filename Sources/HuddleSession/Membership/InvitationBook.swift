import HuddleCrypto
import HuddleProtocol

/// The invitations open in a session, as one member sees them: who opened each, in what order, and the bounds that
/// keep one member from taking every admission.
///
/// A sub-machine of ``SessionMembership``: it decides which invitation an opening evicts; the membership turns the
/// outcome into admission actions and messages. Fairness between members: one member keeps at most
/// ``ProtocolLimits/maxOpenInvitationsPerMember`` open (a new one closes its own oldest), and when all
/// ``ProtocolLimits/maxAdmissions`` but one (the session admission's) are taken, the owner holding the most gives up
/// its oldest, so a member that floods invitations only ever closes its own.
struct InvitationBook: Sendable {
    /// Open invitations by admission.
    private(set) var grants: [AdmissionID: InvitationGrant] = [:]
    /// Who opened each (`nil`: unknown, it came in a WELCOME).
    private var owners: [AdmissionID: X25519PublicKey?] = [:]
    /// Admissions in the order they were opened, oldest first.
    private var order: [AdmissionID] = []
    /// Invitations closed to keep to the bounds.
    private(set) var evicted = 0

    /// Whether `id` is open.
    func contains(_ id: AdmissionID) -> Bool { grants[id] != nil }

    /// Open invitation `id`, if it is open.
    func grant(_ id: AdmissionID) -> InvitationGrant? { grants[id] }

    /// The open invitations members share (all but this member's limited ones).
    var shared: [InvitationGrant] { order.compactMap { grants[$0] }.filter { !$0.isLocal } }

    /// Takes one use of invitation `id` (a joiner was welcomed under it). Unlimited invitations are unchanged.
    mutating func takeUse(of id: AdmissionID) {
        guard let left = grants[id]?.usesLeft, left > 0 else { return }
        grants[id]?.usesLeft = left - 1
    }

    /// Whether invitation `id` is open but every use of it was taken. It stays open until it expires (or is
    /// revoked), so a joiner that comes too late completes its handshake and is told, instead of waiting out its
    /// join timeout on an admission that no longer answers.
    func isUsedUp(_ id: AdmissionID) -> Bool { grants[id]?.usesLeft == 0 }

    /// The open invitations' ids, oldest first.
    var ids: [AdmissionID] { order }

    /// How many invitations are open.
    var count: Int { grants.count }

    /// The earliest expiry (wall-clock seconds) of an open invitation. A plain loop: the transport asks after every
    /// input, and `lazy.map(\.expiresAt)` projected each value through the key-path runtime.
    var earliestExpiry: UInt64? {
        var earliest: UInt64?
        for grant in grants.values { earliest = min(earliest ?? grant.expiresAt, grant.expiresAt) }
        return earliest
    }

    /// The invitations expired at `unixSeconds`.
    func expired(at unixSeconds: UInt64) -> [AdmissionID] {
        grants.values.filter { $0.expiresAt <= unixSeconds }.map(\.id)
    }

    /// Opens `grant` for `owner`, first closing what the bounds require; returns the admissions closed to make room
    /// (empty when `grant` is already open: nothing changes then).
    mutating func open(_ grant: InvitationGrant, owner: X25519PublicKey?) -> [AdmissionID] {
        guard grants[grant.id] == nil else { return [] }
        var closed: [AdmissionID] = []
        let owned = order.filter { self.owner(of: $0) == owner }
        if owner != nil, owned.count >= ProtocolLimits.maxOpenInvitationsPerMember {
            closed.append(owned[0])
        } else if grants.count >= ProtocolLimits.maxAdmissions - 1 {
            var counts: [X25519PublicKey?: Int] = [:]
            for id in order { counts[self.owner(of: id), default: 0] += 1 }
            let greediest = counts.max { $0.value < $1.value }?.key ?? nil
            if let oldest = order.first(where: { self.owner(of: $0) == greediest }) { closed.append(oldest) }
        }
        for id in closed where close(id) { evicted += 1 }
        grants[grant.id] = grant
        owners[grant.id] = owner
        order.append(grant.id)
        return closed
    }

    /// Closes `id`; returns whether it was open.
    @discardableResult
    mutating func close(_ id: AdmissionID) -> Bool {
        guard grants.removeValue(forKey: id) != nil else { return false }
        owners[id] = nil
        order.removeAll { $0 == id }
        return true
    }

    /// The member that opened invitation `id` (`nil`: unknown, it came in a WELCOME).
    func owner(of id: AdmissionID) -> X25519PublicKey? { owners[id] ?? nil }
}
