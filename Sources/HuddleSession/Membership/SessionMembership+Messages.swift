import HuddleCrypto
import HuddleProtocol

/// Membership messages: what a member, a joiner and a sponsor do with each one (see ``SessionMembership`` for the
/// rules). In a file of its own to keep the type's main file to its state, connection events and local operations.
extension SessionMembership {
    /// Handles one membership message from the authenticated peer `key`; `admission` is the invitation that let the
    /// peer in, if it is a joiner. A thrown error means: close that connection with a protocol violation.
    public mutating func receive(
        _ bytes: [UInt8], from key: X25519PublicKey, admission: AdmissionID?
    ) throws(MembershipError) {
        let message = try MembershipMessage(decoding: bytes)
        // After this node left (or the session ended) its members may still gossip to it until they learn of it:
        // nothing they say matters any more, and none of it is a violation.
        if phase == .left || phase == .ended || phase == .removed { return }
        // While joining, only the sponsor's answers matter (WELCOME, or that the request waits or was turned away):
        // members that still know this key from before a restart may already send it roster and activity, which the
        // WELCOME carries anyway.
        if phase == .joining {
            switch message {
            case .welcome: break
            case .joinWaiting:
                if join.waitForApproval(from: key) { actions.append(.waitingForApproval) }
                return
            case .joinRefused(let reason):
                if join.refuse(from: key) { actions.append(.joinFailed(.refused(reason))) }
                return
            default: return
            }
        } else if case .welcome = message, join.wasAsked(key) {
            // A second sponsor answered a repeated request: the first WELCOME made this node a member already.
            return
        }
        // A peer that reached us under an invitation and is not in our roster yet may be a member whose
        // announcement has not arrived: a joiner welcomed by another member reaches us with its invitation
        // credentials and, once welcomed, gossips the roster to everyone it is connected to. That is a race, not a
        // violation: ignore what it says until the announcement makes it a member (the sponsor's roster reaches us
        // anyway). Only its join request and its own record count.
        if phase == .member, admission != nil, !members.isPresent(key) {
            switch message {
            case .joinRequest:
                break
            case .memberJoined(let record) where record.staticKey == key:
                // Its own record, which its sponsor gave it in the WELCOME: the peer proved it holds the
                // invitation (its handshake), so this is a join through us, announced by the joiner itself. It
                // covers a sponsor that crashed right after its WELCOME, before its announcement went out (the
                // joiner would otherwise be a member nobody else knows).
                // (Taken as new, it also gets our roster and activity: it may have missed what happened since its
                // WELCOME, see handleMemberJoined.)
                guard let admission, admitsSelfAnnouncement(of: record, under: admission) else {
                    selfAnnouncementsRefused += 1
                    return
                }
                try handleMemberJoined(record, from: key)
                return
            default:
                earlyMessagesIgnored += 1
                return
            }
        }
        // The sponsor's boundary messages follow its WELCOME; anything else means the admission key is not coming.
        switch message {
        case .charter, .memberRemoved, .admissionKey, .invitationsRevoked, .askInvitationOpened, .welcome: break
        default:
            awaitingAdmissionKey = false
            if key == welcomeBoundarySponsor { welcomeBoundarySponsor = nil }
        }
        switch message {
        case .joinRequest(let session, let invitation, let member):
            try handleJoinRequest(session: session, invitation: invitation, member: member, from: key, admission)
        case .welcome(let welcome):
            try handleWelcome(welcome, from: key)
        case .memberJoined(let record):
            try requireMember(key)
            // Its own record over its old connection after it left (the members' credentials still admit it until
            // that connection closes): leaving ends a membership, and only an admission starts one again.
            if record.staticKey == key, !members.isPresent(key) {
                selfAnnouncementsRefused += 1
                return
            }
            try handleMemberJoined(record, from: key)
        case .memberLeft(let signingKey, let epoch):
            try requireMember(key)
            guard let entry = members.entry(key), entry.record.identity.signingKey == signingKey else {
                throw .impersonation
            }
            guard entry.present, entry.record.epoch == epoch else { return }
            members.markDeparted(key)
            // One already unreachable was reported gone then.
            if !reachability.markReachable(key) { actions.append(.participantLeft(entry.record, .left)) }
            // It keeps the admission's current key: the admission moves on, so that key lets it back in nowhere.
            boundary.rememberDeparture(of: signingKey)
            actions.append(.rotateAdmissionAfterDeparture(place: rotationPlace, epoch: boundary.admissionEpoch))
        case .activity(let record):
            // Forwarded as well as original (members pass the current activity to members they reconnect to), so
            // the author need not be the sender: any member may set the activity anyway.
            try requireMember(key)
            guard record.payload.count <= ProtocolLimits.maxActivityBytes else {
                throw .limitExceeded(what: "activity", limit: ProtocolLimits.maxActivityBytes)
            }
            adopt(record, from: key)
        case .invitationOpened(let grant):
            try requireMember(key)
            open(grant, owner: key)
        case .sessionEnded(let by):
            try requireMember(key)
            guard let entry = members.entry(key), entry.record.identity.signingKey == by else { throw .impersonation }
            phase = .ended
            actions.append(.ended(by: entry.record))
        case .charter(let charter):
            try requireMember(key)
            guard charter.isValid(for: session) else { throw .invalidCharter }
            // Only the creator can sign one for this id; should it have signed two policies, the first one stands.
            if boundary.charter == nil { boundary.charter = charter }
        case .memberRemoved(let removal):
            try requireMember(key)
            // A relayed copy of a removal already applied: its signature was checked when it first came. Every
            // member relays each removal to every other, so checking each copy cost O(n²) signature checks per
            // removal, 84 % of a removal's instructions at 32 members (docs/PERFORMANCE.md, `make rotation-cpu`).
            if boundary.remembers(removal) { return }
            guard removal.isValid(for: session) else { throw .removalRefused("the signature does not verify") }
            // Without the charter (an older creator's session) nobody may remove: such a removal is not ours to judge.
            guard let charter = boundary.charter else { return }
            guard charter.permitsRemoval(by: removal.author), !boundary.isRemoved(signing: removal.author) else {
                throw .removalRefused("the charter does not let its author remove members")
            }
            apply(removal, from: key)
        case .admissionKey(let admissionKey):
            try requireMember(key)
            adopt(admissionKey, from: key)
        case .invitationsRevoked(let ids):
            // Any member may revoke an invitation, as any may open one.
            try requireMember(key)
            revoke(ids, from: key)
        case .askInvitationOpened(let grant):
            try requireMember(key)
            open(grant, owner: key)
        case .joinAsked(let record):
            try requireMember(key)
            try handleJoinAsked(record, from: key)
        case .joinAnswered(let joiner, let admitted):
            // Any member may answer, as any may invite.
            try requireMember(key)
            guard let author = members.record(key) else { return }
            settleJoinRequest(of: joiner, admitted: admitted, by: author)
        case .joinWaiting, .joinRefused:
            // Only a joiner expects these (handled above); a member has nothing to do with them.
            return
        case .unknown:
            return
        }
    }

    /// Whether a peer that came in under `admission` and announces its own `record` (no sponsor vouches for it) is
    /// let in by that alone. Under the session admission: unless it left while the admission was at its current key
    /// (it kept that key). Under an invitation: only one that admits anyone holding the ticket at once, or an
    /// ask-to-join one whose request a member admitted; a limited or ask-to-join invitation is not a way around
    /// its count or its question, and a closed one lets nobody in.
    private func admitsSelfAnnouncement(of record: MemberRecord, under admission: AdmissionID) -> Bool {
        if admission == sessionAdmission {
            return !boundary.departedUnderCurrentAdmission(record.identity.signingKey)
        }
        guard let grant = invitations.grant(admission), !grant.isLocal else { return false }
        return !grant.requiresApproval || approvals.answer(for: record.identity.signingKey) == true
    }

    private func requireMember(_ key: X25519PublicKey) throws(MembershipError) {
        guard phase == .member, members.contains(key) else {
            throw .unexpected("membership message from a peer that is not a member")
        }
        guard !boundary.isRemoved(static: key) else { throw .removedMember }
    }

    /// Applies a removal this node checked (or made: `sender` is `nil`): the removed member is told and shut out,
    /// reported gone, every other present member gets the removal (but `sender`), every open invitation closes
    /// (the removed member knew them all), and its author draws the next admission key. A removal of this node ends
    /// its part in the session.
    mutating func apply(_ removal: MemberRemoval, from sender: X25519PublicKey?) {
        if removal.removed == local.identity.signingKey {
            phase = .removed
            let author = members.key(signing: removal.author).flatMap { members.entry($0)?.record }
            actions.append(.removed(by: author))
            return
        }
        let key = members.key(signing: removal.removed)
        guard boundary.remember(removal, staticKey: key) else { return }
        broadcast(.memberRemoved(removal), except: sender)
        if let key, let entry = members.entry(key) {
            // Told over its own connection, if it is up: an honest member then closes its connections itself.
            if reachability.isConnected(key) { send(.memberRemoved(removal), to: key) }
            if entry.present {
                members.markDeparted(key)
                // Also when it was reported unreachable already (the removed node closed its connection to us before
                // the removal reached us): unreachable may end, removed does not, and the application learns which.
                reachability.markReachable(key)
                actions.append(.participantLeft(entry.record, .removed(by: removal.author)))
            }
            // Not connected: nothing will close, so it is forgotten (unauthorised) now. Connected, it is forgotten
            // when its connection closes (``peerDisconnected(_:)``), as any departed member.
            if !reachability.isConnected(key) { actions.append(.forget(key)) }
        }
        // Revoked, not only closed: a member that missed the removal may still offer them. Not when the removal is
        // one the sponsor sends behind this node's WELCOME: the WELCOME listed only invitations open after it (one
        // made since, such as the remover's new ticket, would otherwise close here and, revoked, everywhere).
        let behindWelcome = sender != nil && sender == welcomeBoundarySponsor
        for id in invitations.ids where !behindWelcome && invitations.close(id) {
            boundary.revoke(id)
            actions.append(.closeAdmission(id))
        }
        if removal.author == local.identity.signingKey { actions.append(.rotateAdmission) }
    }

    private mutating func handleJoinRequest(
        session: SessionID, invitation: AdmissionID, member: MemberRecord, from key: X25519PublicKey,
        _ admission: AdmissionID?
    ) throws(MembershipError) {
        guard phase == .member else { throw .unexpected("join request to a node that is not a member") }
        guard session == self.session else { throw .wrongSession }
        // Under the invitation's admission, or from a peer authorised otherwise (it holds the session secret, or
        // both sides dialled each other with the invitation's credentials because each ticket named the other):
        // either way the request must name an invitation that is open here.
        guard invitations.contains(invitation),
            admission == nil || admission == invitation || admission == sessionAdmission
        else {
            // Revoked while the joiner was on its way (it came in under the invitation before the revocation reached
            // this member): it holds the ticket, so it is told, rather than left to wonder why its sponsor went away.
            // (A removed identity is not told: rule 9 closes its connection, as below.)
            if admission == invitation, boundary.isRevoked(invitation), !boundary.isRemoved(member) {
                send(.joinRefused(.invitationClosed), to: key)
                return
            }
            throw .notInvited
        }
        guard member.staticKey == key, member.identity.hasValidBinding else { throw .invalidIdentity }
        // Under the session admission a request skips the ask-to-join question (only members hold its key): not for
        // a member that left while the key was current and kept it.
        if admission == sessionAdmission, boundary.departedUnderCurrentAdmission(member.identity.signingKey) {
            selfAnnouncementsRefused += 1
            throw .notInvited
        }
        guard !boundary.isRemoved(member) else {
            removedRefused += 1
            throw .removedMember
        }
        guard member.name.utf8.count <= ProtocolLimits.maxMemberNameBytes else {
            throw .limitExceeded(what: "member name", limit: ProtocolLimits.maxMemberNameBytes)
        }
        if join.hasWelcomed(key), members.isPresent(key), let secret = sessionSecret {
            // The joiner asked again on the same connection (its WELCOME is on its way, or it asked another member
            // meanwhile): the same record, a current roster, no new epoch.
            send(.welcome(welcomeMessage(secret: secret)), to: key)
            sendBoundary(to: key)
            sendAskInvitations(to: key)
            return
        }
        // A limited invitation whose uses were all taken: the joiner came too late.
        if invitations.isUsedUp(invitation) {
            send(.joinRefused(.invitationClosed), to: key)
            return
        }
        // Ask to join: the joiner waits until a member answers (unless one already did; it came in under the members'
        // own credentials, which no joiner holds, only with a member's consent).
        if invitations.grant(invitation)?.requiresApproval == true, admission != sessionAdmission {
            switch approvals.answer(for: member.identity.signingKey) {
            case true?: break
            case false?:
                send(.joinRefused(.denied), to: key)
                return
            case nil:
                holdForApproval(member, invitation: invitation, from: key)
                return
            }
        }
        try welcomeJoiner(member, from: key, under: invitation)
    }

    /// Lets joiner `member` (connected as `key`) in under `invitation`: a new epoch for its record, its credentials,
    /// the WELCOME with the boundary behind it, and its announcement to every member. A limited invitation loses a
    /// use.
    mutating func welcomeJoiner(
        _ member: MemberRecord, from key: X25519PublicKey, under invitation: AdmissionID?
    ) throws(MembershipError) {
        guard members.makeRoom() else { throw .limitExceeded(what: "roster", limit: ProtocolLimits.maxRosterEntries) }
        if let invitation { invitations.takeUse(of: invitation) }
        clock += 1
        var record = member
        record.epoch = clock
        var addresses = reachability.observedAddress(of: key).map { [$0] } ?? []
        for address in member.addresses where !addresses.contains(address) { addresses.append(address) }
        record.addresses = Array(addresses.prefix(ProtocolLimits.maxMemberAddresses))
        guard let secret = sessionSecret,
            let credentials = try? SessionKeys.memberCredentials(sessionSecret: secret, peer: key)
        else { return }

        reportRestart(of: key)
        insert(record)
        boundary.forgetDeparture(of: member.identity.signingKey)
        join.welcome(key)
        actions.append(.authorize(credentials))
        send(.welcome(welcomeMessage(secret: secret)), to: key)
        // Right behind the WELCOME, on the same connection: who may remove, who was removed, and the admission's
        // current key (the WELCOME's session secret opens only epoch 0); then the ask-to-join invitations, which the
        // WELCOME leaves out (see ``welcomeMessage(secret:)``).
        sendBoundary(to: key)
        sendAskInvitations(to: key)
        // To every member in the roster, connected or not yet: one whose connection is being set up gets it once
        // the handshake completes (a member that never hears of the newcomer would hold its messages forever).
        announce(record, except: key)
        actions.append(.participantJoined(record))
    }

    /// The WELCOME for a joiner whose record is in the roster. It lists the open invitations members share (this
    /// member's limited ones stay here) but the ask-to-join ones: a WELCOME's invitations open unasked, so those follow as ASK_INVITATION_OPENED, which a joiner of an
    /// older version skips (it then never lets anyone in under them without an answer).
    private func welcomeMessage(secret: SecureBytes) -> MembershipMessage.Welcome {
        MembershipMessage.Welcome(
            session: session, sessionSecret: secret, clock: clock, roster: roster,
            activity: activity, invitations: invitations.shared.filter { !$0.requiresApproval })
    }

    /// Sends `key` every open ask-to-join invitation.
    private mutating func sendAskInvitations(to key: X25519PublicKey) {
        for grant in invitations.shared where grant.requiresApproval { send(.opened(grant), to: key) }
    }

    private mutating func handleWelcome(
        _ welcome: MembershipMessage.Welcome, from key: X25519PublicKey
    )
        throws(MembershipError)
    {
        guard phase == .joining, join.wasAsked(key) else {
            throw .unexpected("WELCOME from a peer that was not asked")
        }
        guard welcome.session == session else { throw .wrongSession }
        guard welcome.roster.allSatisfy(\.identity.hasValidBinding) else { throw .invalidIdentity }
        sessionSecret = welcome.sessionSecret
        clock = max(clock, welcome.clock)
        phase = .member
        awaitingAdmissionKey = true
        welcomeBoundarySponsor = key
        openSessionAdmission()
        for record in welcome.roster {
            if record.staticKey == local.staticKey {
                local.epoch = record.epoch
                continue
            }
            insert(record)
            guard
                let credentials = try? SessionKeys.memberCredentials(
                    sessionSecret: welcome.sessionSecret, peer: record.staticKey)
            else { continue }
            actions.append(.authorize(credentials))
            if !reachability.isConnected(record.staticKey) {
                actions.append(.dial(record.staticKey, addresses: record.addresses))
            }
        }
        for grant in welcome.invitations { open(grant, owner: nil) }
        // Announce ourselves to the other members we reached with the invitation, too (they accept a joiner's own
        // record): if the sponsor fails before its announcement goes out, the session still learns of us.
        for other in reachability.connected where other != key { send(.memberJoined(local), to: other) }
        // The activity first, so the driver can check its kind before it reports the join.
        if let activity = welcome.activity { adopt(activity) }
        actions.append(.joined)
        // Every member of the roster is a participant from now on: messages to it wait for its connection.
        for member in activeMembers.dropFirst() { actions.append(.participantJoined(member)) }
        join.finish()
    }

    private mutating func handleMemberJoined(
        _ record: MemberRecord, from sender: X25519PublicKey
    )
        throws(MembershipError)
    {
        // Gossip repeats each record to every member, and checking its binding (an Ed25519 verification) was two
        // thirds of a 64-member session's CPU. The check depends on the identity's bytes alone, and every record in
        // the roster was checked when it came in: an identity the roster (or this node) already holds for that key
        // is not checked again.
        let checked =
            record.staticKey == local.staticKey
            ? record.identity == local.identity : members.holdsIdentity(of: record)
        guard checked || record.identity.hasValidBinding else { throw .invalidIdentity }
        guard record.staticKey != local.staticKey else {
            // Two members welcomed this node (it asked again while the first WELCOME was on its way): the session
            // keeps the larger epoch for it, and so does this node, so its departure names the epoch they know.
            if record.identity == local.identity, record.epoch > local.epoch { local.epoch = record.epoch }
            return
        }
        // A member's own record, over its own connection, for an entry that departed: it left and came back, and its
        // new sponsor, which never saw the old join, gave it the same or even a smaller epoch (sponsors' clocks are
        // their own, and that one lagged). It is here, so it is back: its connection passed an admission (the
        // member's own credentials no longer admit a departed member, and ``receive(_:from:admission:)`` refuses its
        // own record over an old connection), which no earlier incarnation's record can claim.
        let returning =
            record.staticKey == sender && members.entry(record.staticKey).map { !$0.present } == true
        guard members.isNewer(record) || returning else { return }
        // A removed identity stays out, whoever announces it (itself, through an invitation or the session
        // admission it may still hold the secret of, or a member that has not heard of the removal yet).
        guard !boundary.isRemoved(record) else {
            removedRefused += 1
            return
        }
        // A record of a member not connected here is only the sender's word: any member holds the session secret
        // and can make up identities, so bound what one member can put in the roster (and have every node dial)
        // until those members show up. Refused, not a violation: an honest sponsor may welcome a burst of joiners,
        // and each of them still gets in here by connecting and sending its own record.
        let unconfirmed = record.staticKey == sender || reachability.isConnected(record.staticKey) ? nil : sender
        if let unconfirmed, !members.mayIntroduce(by: unconfirmed) {
            membersRefused += 1
            return
        }
        // The roster full of present members (two sponsors admitted the last place at once): the sender only
        // forwards what it was told, so refuse the record rather than close its connection.
        guard members.makeRoom() else {
            membersRefused += 1
            return
        }
        clock = max(clock, record.epoch)
        reportRestart(of: record.staticKey)
        insert(record, introducer: unconfirmed)
        boundary.forgetDeparture(of: record.identity.signingKey)
        guard let secret = sessionSecret,
            let credentials = try? SessionKeys.memberCredentials(sessionSecret: secret, peer: record.staticKey)
        else { return }
        actions.append(.authorize(credentials))
        actions.append(.participantJoined(record))
        if !reachability.isConnected(record.staticKey) {
            actions.append(.dial(record.staticKey, addresses: record.addresses))
        } else {
            // Already connected (it reached us under an invitation while it was joining, when it ignored all but its
            // WELCOME, which may predate what we sent it since): tell it the roster and activity now.
            gossip(to: record.staticKey)
        }
        // Forward a record that is new here to every other member, once (a record seen again is ignored above): a
        // member that joined at the same time through another sponsor, whose WELCOME did not list this one yet,
        // learns of it this way instead of never (epidemic broadcast, O(n^2) small messages per join).
        announce(record, except: sender)
    }

    /// A present, active member is announced again with a larger epoch: it restarted and rejoins, so the participant
    /// it was is gone (it lost its state) and the new one joins next, so applications send it their catch-up state
    /// again. (One already unreachable was reported gone then.)
    private mutating func reportRestart(of key: X25519PublicKey) {
        guard let existing = members.record(key), !reachability.isUnreachable(key) else { return }
        actions.append(.participantLeft(existing, .restarted))
    }

    /// Sends MEMBER_JOINED for `record` to every present member other than `record`'s own and `excluded`.
    private mutating func announce(_ record: MemberRecord, except excluded: X25519PublicKey) {
        let bytes = MembershipMessage.memberJoined(record).encoded()
        for other in members.presentKeys where other != record.staticKey && other != excluded {
            actions.append(.send(bytes, to: other))
        }
    }
}
