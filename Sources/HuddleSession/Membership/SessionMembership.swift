import DequeModule
import HuddleCrypto
import HuddleProtocol

/// Who is in a session, as a sans-IO state machine: joining with an invitation, welcoming joiners, announcing them
/// to everyone so the session becomes a full mesh, departures, the shared activity, and ending the session.
///
/// Inputs are the connection events of the node's ``Endpoint`` (``peerConnected(_:address:)``,
/// ``peerDisconnected(_:)``), membership messages received on ``MembershipMessage/channel``
/// (``receive(_:from:admission:)``) and local calls (``openInvitation(_:)``, ``setActivity(_:)``, ``leave()``,
/// ``end()``). Outputs are ``MembershipAction``s from ``pollAction()``.
///
/// The state is kept by internal sub-machines, each with its own tests: `Roster` (the other members), `JoinProcedure`
/// (joining, and welcoming joiners), `Reachability` (connections and unreachable members), `ActivityRegister` and
/// `InvitationBook`. This type routes inputs to them and turns what they decide into actions, in order. The handling
/// of membership messages is in `SessionMembership+Messages.swift` (so a few setters are `internal(set)`).
///
/// Rules:
/// - A joiner connects to the members its ticket names, asks the first one it reaches (its *sponsor*) to join,
///   and gets a WELCOME: the session secret, the roster, the activity and the open invitations. It then connects to
///   every member directly.
/// - The sponsor checks the invitation, the identity's binding and that the identity's Noise key is the
///   connection's, assigns the next epoch, and announces the newcomer to every member, who authorise and connect
///   to it. Members that reconnect exchange their rosters, so a missed announcement heals.
/// - The roster only grows by joins and shrinks by a member's own announcement (MEMBER_LEFT from anyone else is
///   refused): a join with a larger epoch revives a departed identity.
/// - The activity is a last-writer-wins register ordered by (clock, author): every member converges on the same
///   value. A member forwards a value new to it once to every other member, and the current one to members it
///   (re)connects to, so a change made during a partition, or lost with the author's connection, heals.
/// - A participant is *active* from the moment the local node learns it is in the roster (a WELCOME, a
///   MEMBER_JOINED, or its own join request) until it leaves or becomes unreachable (its connection closed, or it
///   could not be reached at all), whether or not the pairwise connection is up yet: the application addresses
///   messages to the roster, and they wait for the connection (Apple's contract: only members who join after a send
///   or leave before delivery may miss it). A member that was unreachable becomes active again when it reconnects.
///   Messages are passed on from roster members whose connection completed its handshake (``isActiveMember(_:)``);
///   ``SessionCore`` holds those of other authenticated peers until they are.
/// - New member records are forwarded once to every member, so a join that raced another still reaches everyone.
/// - Every member opens the *session admission* (the members' credentials, under an identifier derived from the
///   session secret): a welcomed member whose announcement never reached some member (its sponsor crashed, every
///   member that knew it restarted) still completes a handshake with it, sends its own record first and is a member
///   there from then on.
public struct SessionMembership: Sendable {
    /// Where the local node is in the session's life.
    public enum Phase: Sendable, Equatable {
        /// Waiting for a WELCOME.
        case joining
        /// A member.
        case member
        /// Left (this node announced it).
        case left
        /// The session ended for everyone.
        case ended
        /// A member removed this node.
        case removed
    }

    /// The session.
    public let session: SessionID
    /// The phase.
    public internal(set) var phase: Phase
    /// The local member's record.
    public internal(set) var local: MemberRecord
    /// The current activity, if any was set.
    public var activity: ActivityRecord? { activityRegister.current }
    /// The activity register (``ActivityRegister``).
    var activityRegister = ActivityRegister()
    /// The other members, present and departed (``Roster``).
    var members = Roster()
    /// The connections and the members that became unreachable (``Reachability``).
    var reachability = Reachability()
    /// The join, as this node's own and as the sponsor of others (``JoinProcedure``).
    var join: JoinProcedure
    /// The open invitations (``InvitationBook``).
    var invitations = InvitationBook()
    /// The charter, the removals and the admission key (``SessionBoundary``).
    var boundary = SessionBoundary()
    /// Ask-to-join requests waiting for an answer, and the answers given.
    var approvals = JoinApprovals()
    /// The session's charter, once known (a joiner learns it right after its WELCOME).
    public var charter: SessionCharter? { boundary.charter }
    /// Whether this node knows that the identity with signing key `signingKey` was removed (while it remembers the
    /// removal: ``ProtocolLimits/maxRemovals``).
    public func knowsRemoval(of signingKey: Ed25519PublicKey) -> Bool { boundary.isRemoved(signing: signingKey) }
    /// The session admission's current epoch: 0 until the first removal, one more per rotation.
    public var admissionEpoch: UInt64 { boundary.admissionEpoch }
    /// Whether this node was just welcomed and its sponsor's boundary messages (which end with the admission key, if
    /// it moved past epoch 0) are still to come.
    var awaitingAdmissionKey = false
    /// The sponsor whose boundary messages (rule 8's charter, removals, admission key, revocations) follow the
    /// WELCOME this node just took, until its first other message. The WELCOME listed only invitations still open
    /// after those removals, so applying them closes none of these (see ``apply(_:from:)``).
    var welcomeBoundarySponsor: X25519PublicKey?
    /// Member records and join requests refused because their identity was removed.
    public internal(set) var removedRefused = 0
    /// Invitations closed to keep to the per-member and total limits (see ``openInvitation(_:)``).
    public var invitationsEvicted: Int { invitations.evicted }
    /// The session secret, once this node is a member.
    var sessionSecret: SecureBytes?
    /// The secret of the invitation this node joined with (`nil`: it founded the session). Kept after the join: a
    /// member that never heard of this node (its sponsor crashed before announcing it) and that the admission key
    /// this node holds no longer opens (it moved at a departure) still lets it in under that invitation while it is
    /// open, and this node's own record then stands for the lost announcement.
    var joinInvitationSecret: SecureBytes?
    /// The session's Lamport clock: member epochs and activity values both take their order from it, so it is kept
    /// here rather than in the roster or the activity register.
    var clock: UInt64 = 0
    /// The session admission this node opened as a member (``SessionKeys/sessionAdmission(sessionSecret:)``).
    public private(set) var sessionAdmission: AdmissionID?
    /// The actions not yet polled, in the order they were decided.
    var actions = Deque<MembershipAction>()
    /// Membership messages ignored from a peer under an invitation that is not in the roster yet (see
    /// ``receive(_:from:admission:)``).
    public internal(set) var earlyMessagesIgnored = 0
    /// Own records refused from peers that announced themselves without a sponsor: one that left and tried again
    /// over its old connection or under the admission key it kept, or one under a limited or unanswered ask-to-join
    /// invitation (see ``receive(_:from:admission:)``).
    public internal(set) var selfAnnouncementsRefused = 0
    /// New member records refused: their introducer already had
    /// ``ProtocolLimits/maxUnconfirmedMembersPerIntroducer`` unconfirmed records here, or the roster was full of
    /// present members. A refused member that is real still becomes a member here when it connects (it reaches this
    /// node through the session admission and sends its own record).
    public internal(set) var membersRefused = 0
    /// Whether an activity value received from a member and new here waits to be forwarded to the others
    /// (``forwardActivity()``; the session core paces it by ``ProtocolLimits/activityForwardInterval``).
    public var activityForwardPending: Bool { activityRegister.forwardPending }
    /// Activity forwards sent (each to every other active member).
    public var activityForwards: Int { activityRegister.forwards }
    /// Activity values adopted from members that were superseded before their forward went out, so never forwarded.
    public var activityForwardsCoalesced: Int { activityRegister.coalesced }

    /// Starts a new session with the local node as its only member; `charter` (whose id must be `session`) says who
    /// may remove members (without one, nobody can).
    public init(
        starting session: SessionID, local: MemberRecord, sessionSecret: SecureBytes, charter: SessionCharter? = nil
    ) {
        self.session = session
        self.phase = .member
        self.local = local
        self.sessionSecret = sessionSecret
        self.join = JoinProcedure()
        if let charter, charter.isValid(for: session) { boundary.charter = charter }
        self.local.epoch = 1
        self.clock = 1
        openSessionAdmission()
    }

    /// Joins `session` with an invitation: authorises the members the ticket names with the invitation's credentials
    /// and connects to all of them; the first to answer becomes the sponsor.
    public init(
        joining session: SessionID, local: MemberRecord, invitationSecret: SecureBytes,
        members: [(staticKey: X25519PublicKey, addresses: [NetworkAddress])]
    ) throws {
        self.session = session
        self.phase = .joining
        self.local = local
        self.join = JoinProcedure(invitation: try SessionKeys.admissionID(invitationSecret: invitationSecret))
        self.joinInvitationSecret = invitationSecret
        for member in members where member.staticKey != local.staticKey {
            guard join.addHint(member.staticKey, addresses: member.addresses) else { continue }
            actions.append(
                .authorize(
                    try SessionKeys.joinerCredentials(invitationSecret: invitationSecret, member: member.staticKey))
            )
            actions.append(.dial(member.staticKey, addresses: member.addresses))
        }
    }

    // MARK: - Queries

    /// The next action, or `nil`.
    public mutating func pollAction() -> MembershipAction? { actions.popFirst() }

    /// The members currently active: the local node first, then every member of the roster that has not become
    /// unreachable, in join order (connected or not yet: see the type's rules).
    public var activeMembers: [MemberRecord] {
        guard phase == .member else { return phase == .joining ? [] : [local] }
        return [local] + members.records(excluding: reachability.unreachable)
    }

    /// This node's place in line to draw the admission key after a departure: its rank, by Noise key (bytewise),
    /// among the active members it sees, itself included. Every member sorts the same keys, so with the same view
    /// exactly one draws at once.
    var rotationPlace: Int {
        activeMembers.lazy.filter { $0.staticKey.bytes.lexicographicallyPrecedes(self.local.staticKey.bytes) }.count
    }

    /// Members of the roster that are unreachable (their connection closed or never completed), in join order: the
    /// ones to dial again.
    public var unreachableMembers: [MemberRecord] {
        guard phase == .member else { return [] }
        return members.records(among: reachability.unreachable)
    }

    /// Whether `key` belongs to an active member (see ``activeMembers``), connected or not.
    public func isActiveParticipant(_ key: X25519PublicKey) -> Bool {
        phase == .member && members.isPresent(key) && !reachability.isUnreachable(key)
    }

    /// Every member in the roster (connected or not), the local node first.
    public var roster: [MemberRecord] {
        [local] + members.records
    }

    /// The roster member with Noise static key `key`.
    public func member(_ key: X25519PublicKey) -> MemberRecord? {
        key == local.staticKey ? local : members.record(key)
    }

    /// Whether `key` belongs to a roster member the local node is connected to, so its messages are session traffic
    /// (also while it is marked unreachable: a connected member's messages are not refused because its previous
    /// connection failed). After the local node announced its departure it still takes its members' messages until
    /// its connections close (at most a few seconds): their transports acknowledge them, so dropping them here would
    /// lose them silently; afterwards the senders report what is unacknowledged as `left`.
    public func isActiveMember(_ key: X25519PublicKey) -> Bool {
        (phase == .member || phase == .left) && reachability.isConnected(key) && members.isPresent(key)
    }

    /// Open invitations, for a new member's WELCOME and for tickets.
    public var openInvitations: [InvitationGrant] { Array(invitations.grants.values) }

    /// When the first open invitation expires (Unix seconds), if any are open; without building an array.
    public var earliestInvitationExpiry: UInt64? { invitations.earliestExpiry }

    /// Address hints for a ticket: each active member's Noise key and best known addresses, the local node first,
    /// at most `limit`.
    public func ticketHints(limit: Int) -> [(staticKey: X25519PublicKey, addresses: [NetworkAddress])] {
        activeMembers.prefix(limit).map { ($0.staticKey, $0.addresses) }
    }

    // MARK: - Connection events

    /// A connection to `key` completed its handshake; `address` is where its packets come from.
    ///
    /// `admitted` says the peer came in under an invitation: it is (re)joining and is treated as a joiner until its
    /// request, even if the roster knows its key (a member that restarted).
    public mutating func peerConnected(_ key: X25519PublicKey, address: NetworkAddress?, admitted: Bool = false) {
        reachability.connect(key, address: address)
        switch phase {
        case .joining:
            // The first hint to answer is asked; a new connection to the sponsor means it may have lost the request
            // (a sponsor answers a repeated request on a connection once).
            if join.asksOnConnection(to: key) { requestJoin(from: key) }
        case .member:
            join.connectionOpened(key)
            guard let record = members.record(key) else { return }
            // Its handshake proves someone holds the record's key: no longer a claim of whoever introduced it.
            members.confirm(key)
            // Dialled under the session admission's key (see ``adopt(_:from:)``) or the invitation this node joined
            // with (``redialCredentials(for:attempt:)``): its later handshakes (rekeys) use the members' own
            // credentials again, which both sides hold.
            if let credentials = dialCredentials(for: key, underAdmission: false) {
                actions.append(.authorize(credentials))
            }
            // Active since the roster named it, unless it had become unreachable: then it is back (also when it came
            // in under an invitation: a restarted member's new record, when it arrives, replaces this one).
            if reachability.markReachable(key) { actions.append(.participantJoined(record)) }
            // A joiner: wait for its request.
            guard !admitted else { return }
            gossip(to: key)
        case .left, .ended, .removed:
            break
        }
    }

    /// The connection to `key` closed.
    public mutating func peerDisconnected(_ key: X25519PublicKey) {
        guard reachability.disconnect(key) else { return }
        approvals.disconnected(key)
        switch phase {
        case .joining:
            switch join.connectionClosed(key, connected: reachability.connected) {
            case .ask(let next): requestJoin(from: next)
            case .redial(let sponsor, let addresses): actions.append(.dial(sponsor, addresses: addresses))
            case .fail: actions.append(.joinFailed(.sponsorDisconnected))
            case nil: break
            }
        case .member:
            markUnreachable(key)
        case .left, .ended, .removed:
            break
        }
    }

    /// A connection to `key` closed before its handshake completed (the handshake timed out, there was no address to
    /// dial, or `key` refused it as another protocol revision's: `refusal` holds both prologues). A joiner tries the
    /// next member its ticket names, and fails when none is left (naming the revisions if any refused it); a member
    /// declares `key` unreachable.
    public mutating func connectFailed(_ key: X25519PublicKey, refusal: (ours: [UInt8], theirs: [UInt8])? = nil) {
        switch phase {
        case .joining:
            if join.hintFailed(key, refusal: refusal) {
                let cause = join.refusal.map { JoinFailureCause.incompatibleProtocol(ours: $0.ours, theirs: $0.theirs) }
                actions.append(.joinFailed(cause ?? .noMemberReachable))
            }
        case .member:
            guard !reachability.isConnected(key) else { return }
            markUnreachable(key)
        case .left, .ended, .removed:
            break
        }
    }

    /// A present member's connection is gone: it stops being active (reported once); a departed one is forgotten.
    private mutating func markUnreachable(_ key: X25519PublicKey) {
        guard let entry = members.entry(key) else { return }
        guard entry.present else {
            reachability.markReachable(key)
            actions.append(.forget(key))
            return
        }
        if reachability.markUnreachable(key) { actions.append(.participantLeft(entry.record, .unreachable)) }
    }

    /// Sends the boundary, the roster and the activity to `key`, so an announcement it missed while disconnected
    /// still reaches it. The boundary goes first: the charter, then the removals (so no record of a removed member
    /// arrives before its removal), then the admission key.
    mutating func gossip(to key: X25519PublicKey) {
        sendBoundary(to: key)
        for other in roster where other.staticKey != key {
            send(.memberJoined(other), to: key)
        }
        if let activity { send(.activity(activity), to: key) }
        // Open invitations too: one opened while the link was down (its INVITATION_OPENED lost with the connection)
        // would otherwise never open here, and a joiner holding its ticket could not reach this member.
        for grant in invitations.shared { send(.opened(grant), to: key) }
    }

    /// Sends `key` the charter, every removal remembered and the current admission key (after its first rotation).
    mutating func sendBoundary(to key: X25519PublicKey) {
        if let charter = boundary.charter { send(.charter(charter), to: key) }
        for entry in boundary.removals { send(.memberRemoved(entry.removal), to: key) }
        if let admissionKey = boundary.admissionKey { send(.admissionKey(admissionKey), to: key) }
        if !boundary.revoked.isEmpty { send(.invitationsRevoked(boundary.revoked), to: key) }
    }

    /// Opens the session admission (once): members whose announcement this node missed can still reach it.
    mutating func openSessionAdmission() {
        guard sessionAdmission == nil, let secret = boundary.admissionKey?.secret ?? sessionSecret,
            let (id, credentials) = try? SessionKeys.sessionAdmission(sessionSecret: secret)
        else { return }
        sessionAdmission = id
        actions.append(.openAdmission(id, credentials))
    }

    /// Takes admission key `key` if it supersedes the current one: the session admission reopens under it (the old
    /// one closes at once, and its secret is dropped) and every other present member gets it (but `sender`).
    mutating func adopt(_ key: AdmissionKey, from sender: X25519PublicKey?) {
        guard boundary.adopt(key) else { return }
        if let old = sessionAdmission {
            actions.append(.closeAdmission(old))
            sessionAdmission = nil
        }
        openSessionAdmission()
        broadcast(.admissionKey(key), except: sender)
        // A joiner takes the key right behind its WELCOME, while it starts dialling the roster with the members'
        // credentials: it dials under the key instead, which a member that never heard of it accepts (its sponsor's
        // announcement may never come) and one that did accepts too. (A member that is already in the session keeps
        // its dials: changing credentials restarts a handshake, and its redials alternate anyway.)
        if awaitingAdmissionKey {
            awaitingAdmissionKey = false
            for other in members.presentKeys where !reachability.isConnected(other) {
                if let credentials = dialCredentials(for: other, underAdmission: true) {
                    actions.append(.authorize(credentials))
                }
            }
        }
    }

    /// The credentials to dial member `key` with: the members' own (from the session secret), or, `underAdmission`,
    /// those of the session admission's current key, which a member that never heard of this node accepts (and one
    /// that did as well). `nil` when there is nothing to change: not a member, or the admission still at epoch 0
    /// (whose credentials are the members' own) and, for the members' own, this node a founder (a joiner may have
    /// dialled under its invitation, ``redialCredentials(for:attempt:)``).
    public func dialCredentials(for key: X25519PublicKey, underAdmission: Bool) -> PeerCredentials? {
        guard phase == .member, let sessionSecret else { return nil }
        if underAdmission {
            guard let admissionKey = boundary.admissionKey else { return nil }
            return try? SessionKeys.memberCredentials(sessionSecret: admissionKey.secret, peer: key)
        }
        guard boundary.admissionKey != nil || joinInvitationSecret != nil else { return nil }
        return try? SessionKeys.memberCredentials(sessionSecret: sessionSecret, peer: key)
    }

    /// The credentials for redial `attempt` (1, 2, ...) of unreachable member `key`, alternating: the session
    /// admission's current key (a member that never heard of this node accepts it; one that knows it too), then the
    /// members' own (one that knows this node accepts those). For a member this node never reached since it joined,
    /// every sixth attempt from the second takes the invitation it joined with instead: a member that never heard of
    /// it (its sponsor crashed before announcing it) and whose admission key moved on since this node took it still
    /// lets it in under that, while it is open. (Rarely: a node answers a handshake with the one credential it holds
    /// for the initiator, so two members that knew each other and redial each other meet on their own credentials
    /// on about half their attempts, fewer with a third kind in the cycle.) `nil` when there is nothing to change:
    /// not a member, or the kind is the members' own at admission epoch 0 for a member never dialled otherwise.
    public func redialCredentials(for key: X25519PublicKey, attempt: Int) -> PeerCredentials? {
        if attempt % 6 == 2, phase == .member, let secret = joinInvitationSecret,
            !reachability.everConnected.contains(key)
        {
            return try? SessionKeys.joinerCredentials(invitationSecret: secret, member: key)
        }
        guard boundary.admissionKey != nil || joinInvitationSecret != nil else { return nil }
        return dialCredentials(for: key, underAdmission: attempt % 2 == 1)
    }

    /// Starts a new admission epoch with `secret` (32 fresh random bytes) and sends it to every present member:
    /// the answer to a ``MembershipAction/rotateAdmission`` action.
    public mutating func rotateAdmission(secret: SecureBytes) {
        guard phase == .member else { return }
        adopt(
            AdmissionKey(epoch: boundary.admissionEpoch + 1, author: local.identity.signingKey, secret: secret),
            from: nil)
    }

    /// Asks again for a WELCOME that has not come (``ProtocolLimits/joinRequestInterval`` after the last request):
    /// the next member the ticket names that this node is connected to, after the one asked last, or the same one
    /// when it is the only one. The driver calls this on its timer while ``phase`` is ``Phase/joining``.
    public mutating func retryJoinRequest() {
        guard phase == .joining, !join.isWaitingForApproval, !join.isRefused else { return }
        guard let next = join.nextToAsk(connected: reachability.connected) else { return }
        requestJoin(from: next)
    }

    /// Sends `key` a join request, making it the sponsor.
    private mutating func requestJoin(from key: X25519PublicKey) {
        guard let invitation = join.ask(key) else { return }
        send(.joinRequest(session: session, invitation: invitation, member: local), to: key)
    }

    /// Inserts or revives a roster entry (active, unless the caller marks it unreachable); `introducer` as in
    /// ``Roster/insert(_:introducer:)``.
    mutating func insert(_ record: MemberRecord, introducer: X25519PublicKey? = nil) {
        members.insert(record, introducer: introducer)
        reachability.markReachable(record.staticKey)
    }

    /// Takes `record` if it supersedes the current activity; one received from member `sender` is forwarded.
    mutating func adopt(_ record: ActivityRecord, from sender: X25519PublicKey? = nil) {
        clock = max(clock, record.clock)
        // A value new here is forwarded to every other member (like member records), at the session core's pace
        // (``ActivityRegister``).
        guard activityRegister.adopt(record, from: sender) else { return }
        actions.append(.activityChanged(record))
    }

    /// Sends the current activity to every active member but the one it came from, if a value received from a
    /// member waits to be forwarded (``activityForwardPending``). The session core calls it at most once per
    /// ``ProtocolLimits/activityForwardInterval``.
    public mutating func forwardActivity() {
        guard let forward = activityRegister.takeForward(sending: phase == .member) else { return }
        broadcast(.activity(forward.record), except: forward.except)
    }

    /// Opens `grant`'s admission. `owner` is the member that opened it (`nil`: it came in a WELCOME, opened by members
    /// this node cannot tell apart); the ``InvitationBook`` says which invitations its bounds close first.
    mutating func open(_ grant: InvitationGrant, owner: X25519PublicKey?) {
        // One a removal closed stays closed, whoever still offers it (a member that missed the removal gossips it).
        guard !invitations.contains(grant.id), !boundary.isRevoked(grant.id),
            let credentials = try? SessionKeys.admissionCredentials(invitationSecret: grant.secret)
        else { return }
        for closed in invitations.open(grant, owner: owner) { actions.append(.closeAdmission(closed)) }
        actions.append(.openAdmission(grant.id, credentials))
    }

    /// Sends `message` to `key` (a ``MembershipAction/send(_:to:)`` action).
    mutating func send(_ message: MembershipMessage, to key: X25519PublicKey) {
        actions.append(.send(message.encoded(), to: key))
    }

    /// Sends `message` to every active member but `excluded`; to one whose connection is still being set up it waits
    /// for the handshake, and one that is unreachable gets the roster and activity again when it reconnects.
    mutating func broadcast(_ message: MembershipMessage, except excluded: X25519PublicKey? = nil) {
        let bytes = message.encoded()
        for key in members.presentKeys where key != excluded && !reachability.isUnreachable(key) {
            actions.append(.send(bytes, to: key))
        }
    }

    // MARK: - Local operations

    /// Opens an invitation on this node and tells every member, so a joiner holding its ticket can reach any of
    /// them. Ignored beyond ``ProtocolLimits/maxAdmissions`` open invitations.
    public mutating func openInvitation(_ grant: InvitationGrant) {
        guard phase == .member else { return }
        open(grant, owner: local.staticKey)
        guard invitations.contains(grant.id), !grant.isLocal else { return }
        broadcast(.opened(grant))
    }

    /// Closes an invitation on this node (every member closes its own copy when it expires).
    public mutating func closeInvitation(_ id: AdmissionID) {
        guard invitations.close(id) else { return }
        actions.append(.closeAdmission(id))
    }

    /// Revokes invitation `id` for everyone: it closes here and at every member (each relays the revocation once and
    /// sends every revocation it remembers on each new member connection), and no member opens it again. `false`,
    /// changing nothing, when this node is not a member.
    @discardableResult
    public mutating func revokeInvitation(_ id: AdmissionID) -> Bool {
        guard phase == .member else { return false }
        revoke([id], from: nil)
        return true
    }

    /// Takes the revocations `ids` (from member `sender`, or this node's own): each new one closes its invitation here
    /// and goes to every other present member but `sender`.
    mutating func revoke(_ ids: [AdmissionID], from sender: X25519PublicKey?) {
        var new: [AdmissionID] = []
        for id in ids where !boundary.isRevoked(id) {
            boundary.revoke(id)
            new.append(id)
            if invitations.close(id) { actions.append(.closeAdmission(id)) }
        }
        if !new.isEmpty { broadcast(.invitationsRevoked(new), except: sender) }
    }

    /// Invitations that expired at `unixSeconds`; close them with ``closeInvitation(_:)``.
    public func expiredInvitations(at unixSeconds: UInt64) -> [AdmissionID] {
        invitations.expired(at: unixSeconds)
    }

    /// Sets the shared activity for everyone.
    public mutating func setActivity(_ payload: [UInt8]) {
        guard phase == .member else { return }
        clock += 1
        let record = ActivityRecord(clock: clock, author: local.identity.signingKey, payload: payload)
        activityRegister.set(record)
        actions.append(.activityChanged(record))
        broadcast(.activity(record))
    }

    /// Announces that this node leaves. The driver closes the connections once the announcement is delivered.
    public mutating func leave() {
        guard phase == .member || phase == .joining else { return }
        if phase == .member { broadcast(.memberLeft(signingKey: local.identity.signingKey, epoch: local.epoch)) }
        phase = .left
    }

    /// Removes a member for everyone with `removal`, which this node's identity signed (``MemberRemoval``). Returns
    /// `false`, changing nothing, when the charter is unknown or does not permit this node to remove, or `removal`
    /// names this node or no member of the roster. The removed member is told, its identity is shut out, every
    /// open invitation closes (the removed member knew them) and the session admission moves to a new key.
    @discardableResult
    public mutating func remove(_ removal: MemberRemoval) -> Bool {
        guard phase == .member, let charter = boundary.charter, removal.author == local.identity.signingKey,
            charter.permitsRemoval(by: removal.author), removal.removed != local.identity.signingKey,
            removal.isValid(for: session), members.key(signing: removal.removed) != nil
        else { return false }
        apply(removal, from: nil)
        return true
    }

    /// Ends the session for everyone.
    public mutating func end() {
        guard phase == .member else { return }
        broadcast(.sessionEnded(by: local.identity.signingKey))
        phase = .ended
        actions.append(.ended(by: nil))
    }
}
