import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// Ask to join, driven on ``SessionMembership`` directly: the sponsor holds the joiner, every member hears of it, the
/// first answer decides, and every way a request ends reaches the joiner as a typed refusal.
@Suite("Asking to join")
struct JoinApprovalTests {
    /// A sponsor with one other member (`bob`, connected) and an ask-to-join invitation open.
    struct Sponsor {
        var membership: SessionMembership
        var random = ChaChaRandomGenerator(seed: 401)
        let session = SessionID(bytes: Array(repeating: 7, count: SessionID.length))!
        let invitation: InvitationGrant
        let bob: MemberRecord

        init() throws {
            var random = ChaChaRandomGenerator(seed: 400)
            let local = MemberRecord(
                identity: Identity(using: &random).publicIdentity, name: "sponsor",
                addresses: [EndpointPair.address(1)], epoch: 0)
            membership = SessionMembership(starting: session, local: local, sessionSecret: EndpointPair.secret(1))
            bob = MemberRecord(
                identity: Identity(using: &random).publicIdentity, name: "bob", addresses: [EndpointPair.address(2)],
                epoch: 0)
            let plain = try InvitationGrant(secret: EndpointPair.secret(3), expiresAt: .max)
            membership.openInvitation(plain)
            // bob joins unasked through the plain invitation, so he is a member with a connection.
            membership.peerConnected(bob.staticKey, address: bob.addresses[0], admitted: true)
            try membership.receive(
                MembershipMessage.joinRequest(session: session, invitation: plain.id, member: bob).encoded(),
                from: bob.staticKey, admission: plain.id)
            invitation = try InvitationGrant(secret: EndpointPair.secret(2), expiresAt: .max, requiresApproval: true)
            membership.openInvitation(invitation)
            _ = actions()
        }

        /// A joiner record (not connected yet).
        mutating func joiner(_ name: String, address: UInt8) -> MemberRecord {
            MemberRecord(
                identity: Identity(using: &random).publicIdentity, name: name,
                addresses: [EndpointPair.address(address)], epoch: 0)
        }

        /// `joiner` connects under the ask-to-join invitation and asks; returns the actions that follow.
        mutating func ask(_ joiner: MemberRecord) throws -> [MembershipAction] {
            membership.peerConnected(joiner.staticKey, address: joiner.addresses[0], admitted: true)
            try membership.receive(
                MembershipMessage.joinRequest(session: session, invitation: invitation.id, member: joiner).encoded(),
                from: joiner.staticKey, admission: invitation.id)
            return actions()
        }

        mutating func actions() -> [MembershipAction] {
            var actions: [MembershipAction] = []
            while let action = membership.pollAction() { actions.append(action) }
            return actions
        }
    }

    static func sent(_ actions: [MembershipAction], to key: X25519PublicKey) -> [MembershipMessage] {
        MemberRemovalTests.sent(actions, to: key)
    }

    static func refusal(_ messages: [MembershipMessage]) -> JoinRefusal? {
        for case .joinRefused(let reason) in messages { return reason }
        return nil
    }

    static func settled(_ actions: [MembershipAction]) -> [(record: MemberRecord, outcome: JoinRequestOutcome)] {
        actions.compactMap { action in
            if case .joinRequestSettled(let record, let outcome) = action { (record, outcome) } else { nil }
        }
    }

    static func welcomed(_ messages: [MembershipMessage]) -> Bool {
        messages.contains { if case .welcome = $0 { true } else { false } }
    }

    @Test("A joiner under an ask-to-join invitation waits: told so, every member asked, nobody welcomed it yet")
    func requestWaits() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        let actions = try sponsor.ask(cara)
        let toCara = Self.sent(actions, to: cara.staticKey)
        #expect(toCara.contains { if case .joinWaiting = $0 { true } else { false } })
        #expect(!Self.welcomed(toCara))
        #expect(sponsor.membership.member(cara.staticKey) == nil)
        #expect(
            Self.sent(actions, to: sponsor.bob.staticKey).contains {
                if case .joinAsked(cara) = $0 { true } else { false }
            })
        #expect(actions.contains { if case .joinRequested(cara) = $0 { true } else { false } })
        #expect(sponsor.membership.pendingJoinRequests == [cara])

        // Asking again on the same connection is told to wait again, and nobody is asked twice.
        let again = try sponsor.ask(cara)
        #expect(Self.sent(again, to: cara.staticKey).contains { if case .joinWaiting = $0 { true } else { false } })
        #expect(Self.sent(again, to: sponsor.bob.staticKey).isEmpty)
        #expect(!again.contains { if case .joinRequested = $0 { true } else { false } })
    }

    @Test("Admitted here: the joiner is welcomed, every member learns who answered, the request is settled")
    func admittedLocally() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        _ = try sponsor.ask(cara)
        let answered1 = sponsor.membership.answerJoinRequest(cara.identity.signingKey, admit: true)
        #expect(answered1)
        let actions = sponsor.actions()
        #expect(Self.welcomed(Self.sent(actions, to: cara.staticKey)))
        let toBob = Self.sent(actions, to: sponsor.bob.staticKey)
        #expect(toBob.contains { if case .joinAnswered(cara.identity.signingKey, true) = $0 { true } else { false } })
        #expect(
            toBob.contains {
                if case .memberJoined(let record) = $0 { record.staticKey == cara.staticKey } else { false }
            })
        let local = sponsor.membership.local
        #expect(Self.settled(actions).contains { $0.record == cara && $0.outcome == .admitted(by: local) })
        #expect(sponsor.membership.pendingJoinRequests.isEmpty)
        #expect(sponsor.membership.isActiveMember(cara.staticKey))
        // Answered: a second answer changes nothing.
        let answered2 = sponsor.membership.answerJoinRequest(cara.identity.signingKey, admit: false)
        #expect(!answered2)
    }

    @Test("Admitted by another member: the sponsor welcomes the joiner when the answer arrives")
    func admittedElsewhere() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        _ = try sponsor.ask(cara)
        try sponsor.membership.receive(
            MembershipMessage.joinAnswered(joiner: cara.identity.signingKey, admitted: true).encoded(),
            from: sponsor.bob.staticKey, admission: nil)
        let actions = sponsor.actions()
        #expect(Self.welcomed(Self.sent(actions, to: cara.staticKey)))
        // bob as the roster knows him (his epoch assigned when he joined).
        let bob = try #require(sponsor.membership.member(sponsor.bob.staticKey))
        #expect(Self.settled(actions).contains { $0.record == cara && $0.outcome == .admitted(by: bob) })
    }

    @Test("Denied: the joiner is refused with a reason, and asking again is refused at once")
    func denied() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        _ = try sponsor.ask(cara)
        let answered3 = sponsor.membership.answerJoinRequest(cara.identity.signingKey, admit: false)
        #expect(answered3)
        let actions = sponsor.actions()
        #expect(Self.refusal(Self.sent(actions, to: cara.staticKey)) == .denied)
        #expect(!Self.welcomed(Self.sent(actions, to: cara.staticKey)))
        #expect(sponsor.membership.member(cara.staticKey) == nil)
        let again = try sponsor.ask(cara)
        #expect(Self.refusal(Self.sent(again, to: cara.staticKey)) == .denied)
        #expect(!again.contains { if case .joinRequested = $0 { true } else { false } })
    }

    @Test("Unanswered: expiry refuses the joiner as unanswered; at the bound the oldest request gives way")
    func expiryAndBound() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        _ = try sponsor.ask(cara)
        sponsor.membership.expireJoinRequest(cara.identity.signingKey)
        var actions = sponsor.actions()
        #expect(Self.refusal(Self.sent(actions, to: cara.staticKey)) == .unanswered)
        #expect(Self.settled(actions).contains { $0.record == cara && $0.outcome == .expired })

        var joiners: [MemberRecord] = []
        for index in 0..<ProtocolLimits.maxPendingJoinRequests {
            let joiner = sponsor.joiner("j\(index)", address: UInt8(20 + index))
            joiners.append(joiner)
            _ = try sponsor.ask(joiner)
        }
        #expect(sponsor.membership.pendingJoinRequests.count == ProtocolLimits.maxPendingJoinRequests)
        let extra = sponsor.joiner("extra", address: 99)
        actions = try sponsor.ask(extra)
        #expect(sponsor.membership.pendingJoinRequests.count == ProtocolLimits.maxPendingJoinRequests)
        #expect(Self.refusal(Self.sent(actions, to: joiners[0].staticKey)) == .unanswered)
        let oldest = joiners[0]
        #expect(Self.settled(actions).contains { $0.record == oldest && $0.outcome == .expired })
        #expect(sponsor.membership.pendingJoinRequests.last == extra)
    }

    @Test("A request whose invitation was revoked while it waited is refused as closed, even once admitted")
    func revokedWhileWaiting() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        _ = try sponsor.ask(cara)
        let revoked = sponsor.membership.revokeInvitation(sponsor.invitation.id)
        #expect(revoked)
        _ = sponsor.actions()
        let answered5 = sponsor.membership.answerJoinRequest(cara.identity.signingKey, admit: true)
        #expect(answered5)
        let actions = sponsor.actions()
        #expect(Self.refusal(Self.sent(actions, to: cara.staticKey)) == .invitationClosed)
        #expect(!Self.welcomed(Self.sent(actions, to: cara.staticKey)))
        // A new request under the revoked invitation (its handshake beat the revocation) is told why, not closed.
        let dan = sponsor.joiner("dan", address: 10)
        let refused = try sponsor.ask(dan)
        #expect(Self.refusal(Self.sent(refused, to: dan.staticKey)) == .invitationClosed)
    }

    @Test("A WELCOME leaves ask-to-join invitations out; they follow as ASK_INVITATION_OPENED")
    func welcomeOmitsAskInvitations() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        _ = try sponsor.ask(cara)
        sponsor.membership.answerJoinRequest(cara.identity.signingKey, admit: true)
        let toCara = Self.sent(sponsor.actions(), to: cara.staticKey)
        let welcome = toCara.compactMap { message -> MembershipMessage.Welcome? in
            if case .welcome(let welcome) = message { welcome } else { nil }
        }.first
        #expect(welcome?.invitations.contains { $0.id == sponsor.invitation.id } == false)
        #expect(welcome?.invitations.count == 1)
        let asked = toCara.compactMap { message -> InvitationGrant? in
            if case .askInvitationOpened(let grant) = message { grant } else { nil }
        }
        #expect(asked.map(\.id) == [sponsor.invitation.id])
        #expect(asked.first?.requiresApproval == true)
    }

    @Test("A member told of a request reports it, and answers a later report with the answer it knows")
    func memberHearsOfRequest() throws {
        var sponsor = try Sponsor()
        let cara = sponsor.joiner("cara", address: 9)
        // The sponsor is only a member here: bob sponsors cara and tells it.
        try sponsor.membership.receive(
            MembershipMessage.joinAsked(cara).encoded(), from: sponsor.bob.staticKey, admission: nil)
        #expect(sponsor.actions().contains { if case .joinRequested(cara) = $0 { true } else { false } })
        let answered6 = sponsor.membership.answerJoinRequest(cara.identity.signingKey, admit: false)
        #expect(answered6)
        let answer = Self.sent(sponsor.actions(), to: sponsor.bob.staticKey)
        #expect(answer.contains { if case .joinAnswered(cara.identity.signingKey, false) = $0 { true } else { false } })
        // bob missed it and asks again: he gets the answer, and nobody is asked again.
        try sponsor.membership.receive(
            MembershipMessage.joinAsked(cara).encoded(), from: sponsor.bob.staticKey, admission: nil)
        let actions = sponsor.actions()
        #expect(!actions.contains { if case .joinRequested = $0 { true } else { false } })
        #expect(
            Self.sent(actions, to: sponsor.bob.staticKey).contains {
                if case .joinAnswered(cara.identity.signingKey, false) = $0 { true } else { false }
            })
    }

    @Test(
        "The joiner: JOIN_WAITING is reported once and stops its retries; JOIN_REFUSED fails the join with the reason")
    func joinerSide() throws {
        var random = ChaChaRandomGenerator(seed: 410)
        let session = SessionID(bytes: Array(repeating: 7, count: SessionID.length))!
        let sponsorKey = Identity(using: &random).publicIdentity.agreementKey
        let local = MemberRecord(
            identity: Identity(using: &random).publicIdentity, name: "cara", addresses: [EndpointPair.address(9)],
            epoch: 0)
        var joiner = try SessionMembership(
            joining: session, local: local, invitationSecret: EndpointPair.secret(2),
            members: [(sponsorKey, [EndpointPair.address(1)])])
        func drain() -> [MembershipAction] {
            var actions: [MembershipAction] = []
            while let action = joiner.pollAction() { actions.append(action) }
            return actions
        }
        _ = drain()
        joiner.peerConnected(sponsorKey, address: EndpointPair.address(1))
        #expect(Self.sent(drain(), to: sponsorKey).contains { if case .joinRequest = $0 { true } else { false } })

        try joiner.receive(MembershipMessage.joinWaiting.encoded(), from: sponsorKey, admission: nil)
        #expect(drain().contains { if case .waitingForApproval = $0 { true } else { false } })
        try joiner.receive(MembershipMessage.joinWaiting.encoded(), from: sponsorKey, admission: nil)
        #expect(!drain().contains { if case .waitingForApproval = $0 { true } else { false } })
        joiner.retryJoinRequest()
        #expect(Self.sent(drain(), to: sponsorKey).isEmpty)

        try joiner.receive(MembershipMessage.joinRefused(.denied).encoded(), from: sponsorKey, admission: nil)
        #expect(drain().contains { if case .joinFailed(.refused(.denied)) = $0 { true } else { false } })
        // Once refused, nothing more happens: no second failure, no retry.
        try joiner.receive(MembershipMessage.joinRefused(.unanswered).encoded(), from: sponsorKey, admission: nil)
        joiner.retryJoinRequest()
        #expect(drain().isEmpty)
    }
}
