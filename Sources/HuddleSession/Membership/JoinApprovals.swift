import HuddleCrypto
import HuddleProtocol

/// Ask-to-join, as one member sees it: the joiners waiting for a member's answer, which of them reached this member
/// (so it is the one to let them in or turn them away), and the answers given recently.
///
/// A sub-machine of ``SessionMembership``, which sends the messages and reports the changes. Guarantees:
/// - At most ``ProtocolLimits/maxPendingJoinRequests`` requests wait at once; the oldest gives way to a newer one
///   (reported as expired), so a flood of joiners cannot grow a member's state.
/// - A request is answered once: the first answer to reach a member settles it there; later ones change nothing.
/// - The last ``ProtocolLimits/maxRememberedJoinAnswers`` answers are kept, so a joiner that asks another member
///   after its sponsor answered (or crashed) gets the same answer without anyone being asked twice.
struct JoinApprovals: Sendable {
    /// A joiner waiting for an answer.
    struct Pending: Sendable {
        /// The joiner's record, as its request named it.
        var record: MemberRecord
        /// The invitation the joiner came with, where its request reached this member (`nil`: another member told
        /// of it).
        var invitation: AdmissionID?
        /// Whether the joiner's request reached this member on its current connection: this member welcomes or
        /// refuses it once someone answers.
        var sponsoredHere: Bool
    }

    /// Waiting joiners by signing key, in the order they first asked (oldest first).
    private(set) var pending: [Ed25519PublicKey: Pending] = [:]
    private var order: [Ed25519PublicKey] = []
    /// Recent answers by joiner signing key (`true`: admitted), oldest first.
    private var answers: [(joiner: Ed25519PublicKey, admitted: Bool)] = []

    /// The waiting joiners, oldest first.
    var waiting: [MemberRecord] { order.compactMap { pending[$0]?.record } }

    /// The answer given to the joiner with signing key `joiner`, if one is remembered.
    func answer(for joiner: Ed25519PublicKey) -> Bool? {
        answers.last { $0.joiner == joiner }?.admitted
    }

    /// The joiner with signing key `joiner`, if it waits.
    func request(of joiner: Ed25519PublicKey) -> Pending? { pending[joiner] }

    /// Adds (or refreshes) the request of `record`, under `invitation` and `sponsoredHere` when it reached this member.
    /// Returns whether it is new here, and the request that gave way to it (the oldest, at the bound).
    mutating func ask(
        _ record: MemberRecord, invitation: AdmissionID?, sponsoredHere: Bool
    ) -> (isNew: Bool, evicted: Pending?) {
        let key = record.identity.signingKey
        if var existing = pending[key] {
            if sponsoredHere {
                existing.sponsoredHere = true
                existing.invitation = invitation
            }
            pending[key] = existing
            return (false, nil)
        }
        var evicted: Pending?
        if order.count >= ProtocolLimits.maxPendingJoinRequests {
            let oldest = order.removeFirst()
            evicted = pending.removeValue(forKey: oldest)
        }
        pending[key] = Pending(record: record, invitation: invitation, sponsoredHere: sponsoredHere)
        order.append(key)
        return (true, evicted)
    }

    /// The joiner with Noise key `key` is no longer connected here: another member may be its sponsor now.
    mutating func disconnected(_ key: X25519PublicKey) {
        for (signing, entry) in pending where entry.record.staticKey == key {
            pending[signing]?.sponsoredHere = false
        }
    }

    /// Settles the request of `joiner` with `admitted` (remembered even when it does not wait here, for a later
    /// request); returns the request if it was waiting.
    mutating func settle(_ joiner: Ed25519PublicKey, admitted: Bool) -> Pending? {
        if answer(for: joiner) == nil {
            if answers.count >= ProtocolLimits.maxRememberedJoinAnswers { answers.removeFirst() }
            answers.append((joiner, admitted))
        }
        return drop(joiner)
    }

    /// Drops the request of `joiner` without an answer (it expired, or its invitation closed); returns it if it was
    /// waiting.
    @discardableResult
    mutating func drop(_ joiner: Ed25519PublicKey) -> Pending? {
        guard let entry = pending.removeValue(forKey: joiner) else { return nil }
        order.removeAll { $0 == joiner }
        return entry
    }
}
