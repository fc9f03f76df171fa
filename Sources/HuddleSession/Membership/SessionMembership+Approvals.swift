import HuddleCrypto
import HuddleProtocol

/// Ask to join: a joiner under an ask-to-join invitation waits at its sponsor until a member answers.
///
/// The sponsor (the member the joiner's request reached) tells the joiner it waits (JOIN_WAITING) and every member
/// that it asks (JOIN_ASKED). Any member may answer (JOIN_ANSWERED, to every member); the first answer to reach the
/// sponsor decides: it welcomes the joiner or turns it away (JOIN_REFUSED). A joiner whose sponsor goes away asks
/// another member, which heard of the request and keeps it waiting, or already knows the answer. Nobody answering
/// within ``ProtocolLimits/joinApprovalTimeout`` turns the joiner away as unanswered (the session core keeps that
/// deadline).
extension SessionMembership {
    /// The joiners waiting for an answer, oldest first.
    public var pendingJoinRequests: [MemberRecord] { approvals.waiting }

    /// Answers the request of the joiner with signing key `joiner`: it is let in (`admit`) or turned away, by whichever
    /// member it reached; every member learns the answer. `false`, changing nothing, when no such request waits here
    /// (it was answered already, expired, or never came).
    @discardableResult
    public mutating func answerJoinRequest(_ joiner: Ed25519PublicKey, admit: Bool) -> Bool {
        guard phase == .member, approvals.request(of: joiner) != nil else { return false }
        broadcast(.joinAnswered(joiner: joiner, admitted: admit))
        settleJoinRequest(of: joiner, admitted: admit, by: local)
        return true
    }

    /// The request of `joiner` got no answer in time: it is dropped here (reported as expired) and, where this member
    /// holds the joiner's connection, the joiner is turned away as unanswered. The session core calls this
    /// ``ProtocolLimits/joinApprovalTimeout`` after the request came.
    public mutating func expireJoinRequest(_ joiner: Ed25519PublicKey) {
        guard let entry = approvals.drop(joiner) else { return }
        expire(entry)
    }

    /// Holds joiner `member`'s request (it reached this member as `key`, under `invitation`) until someone answers,
    /// telling the joiner it waits and, the first time, every member that it asks.
    mutating func holdForApproval(_ member: MemberRecord, invitation: AdmissionID, from key: X25519PublicKey) {
        let (isNew, evicted) = approvals.ask(member, invitation: invitation, sponsoredHere: true)
        if let evicted { expire(evicted) }
        send(.joinWaiting, to: key)
        guard isNew else { return }
        broadcast(.joinAsked(member))
        actions.append(.joinRequested(member))
    }

    /// Member `key` says joiner `record` asks to join through it.
    mutating func handleJoinAsked(_ record: MemberRecord, from key: X25519PublicKey) throws(MembershipError) {
        guard record.identity.hasValidBinding else { throw .invalidIdentity }
        guard record.name.utf8.count <= ProtocolLimits.maxMemberNameBytes else {
            throw .limitExceeded(what: "member name", limit: ProtocolLimits.maxMemberNameBytes)
        }
        // A removed identity is not asked about: its sponsor refuses it before asking (one that missed the removal
        // learns of it from the boundary it is sent).
        guard !boundary.isRemoved(record) else { return }
        if let admitted = approvals.answer(for: record.identity.signingKey) {
            // Answered already (the sponsor missed it, or the joiner asks again after its sponsor went away).
            send(.joinAnswered(joiner: record.identity.signingKey, admitted: admitted), to: key)
            return
        }
        let (isNew, evicted) = approvals.ask(record, invitation: nil, sponsoredHere: false)
        if let evicted { expire(evicted) }
        if isNew { actions.append(.joinRequested(record)) }
    }

    /// Settles the request of `joiner` with `admitted`, answered by member `author`: reported here, and where this
    /// member holds the joiner's connection the joiner is welcomed or turned away.
    mutating func settleJoinRequest(of joiner: Ed25519PublicKey, admitted: Bool, by author: MemberRecord) {
        guard let entry = approvals.settle(joiner, admitted: admitted) else { return }
        actions.append(.joinRequestSettled(entry.record, admitted ? .admitted(by: author) : .denied(by: author)))
        let key = entry.record.staticKey
        guard entry.sponsoredHere, reachability.isConnected(key) else { return }
        guard admitted else {
            send(.joinRefused(.denied), to: key)
            return
        }
        // The invitation it came with may have closed while it waited (revoked, or a removal closed it), or its last
        // use gone to another joiner.
        if let invitation = entry.invitation, !invitations.contains(invitation) || invitations.isUsedUp(invitation) {
            send(.joinRefused(.invitationClosed), to: key)
            return
        }
        do throws(MembershipError) {
            try welcomeJoiner(entry.record, from: key, under: entry.invitation)
        } catch {
            // The roster is full of present members: there is no room for it.
            send(.joinRefused(.unspecified), to: key)
        }
    }

    /// Reports `entry` expired, turning its joiner away as unanswered if this member holds its connection.
    private mutating func expire(_ entry: JoinApprovals.Pending) {
        actions.append(.joinRequestSettled(entry.record, .expired))
        let key = entry.record.staticKey
        if entry.sponsoredHere, reachability.isConnected(key) { send(.joinRefused(.unanswered), to: key) }
    }
}
