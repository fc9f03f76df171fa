import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// Single-use and N-use invitations, driven on ``SessionMembership`` directly: kept by their maker alone, counted
/// there, and a joiner that comes too late told so.
@Suite("Limited-use invitations")
struct LimitedInvitationTests {
    @Test("A limited invitation is never announced, and lets exactly its uses in; a late joiner is told it closed")
    func usesAreCounted() throws {
        var sponsor = try JoinApprovalTests.Sponsor()
        let limited = try InvitationGrant(secret: EndpointPair.secret(5), expiresAt: .max, uses: 2)
        sponsor.membership.openInvitation(limited)
        let opened = sponsor.actions()
        // Open here (its admission), told to nobody.
        #expect(opened.contains { if case .openAdmission(limited.id, _) = $0 { true } else { false } })
        #expect(JoinApprovalTests.sent(opened, to: sponsor.bob.staticKey).isEmpty)

        var outcomes: [(MemberRecord, [MembershipMessage])] = []
        for (index, name) in ["cara", "dan", "eve"].enumerated() {
            let joiner = sponsor.joiner(name, address: UInt8(30 + index))
            sponsor.membership.peerConnected(joiner.staticKey, address: joiner.addresses[0], admitted: true)
            try sponsor.membership.receive(
                MembershipMessage.joinRequest(session: sponsor.session, invitation: limited.id, member: joiner)
                    .encoded(), from: joiner.staticKey, admission: limited.id)
            outcomes.append((joiner, JoinApprovalTests.sent(sponsor.actions(), to: joiner.staticKey)))
        }
        #expect(JoinApprovalTests.welcomed(outcomes[0].1))
        #expect(JoinApprovalTests.welcomed(outcomes[1].1))
        #expect(!JoinApprovalTests.welcomed(outcomes[2].1))
        #expect(JoinApprovalTests.refusal(outcomes[2].1) == .invitationClosed)
        #expect(sponsor.membership.member(outcomes[2].0.staticKey) == nil)
        // The WELCOMEs did not list it, and it is still open here (a late joiner completes its handshake and is
        // told, rather than waiting out its timeout), until it expires.
        for (_, messages) in outcomes.prefix(2) {
            for case .welcome(let welcome) in messages {
                #expect(!welcome.invitations.contains { $0.id == limited.id })
            }
        }
        #expect(sponsor.membership.openInvitations.contains { $0.id == limited.id })

        // dan asks again on the same connection (his WELCOME was lost): the same WELCOME, not a refusal.
        let dan = outcomes[1].0
        try sponsor.membership.receive(
            MembershipMessage.joinRequest(session: sponsor.session, invitation: limited.id, member: dan).encoded(),
            from: dan.staticKey, admission: limited.id)
        let again = JoinApprovalTests.sent(sponsor.actions(), to: dan.staticKey)
        #expect(JoinApprovalTests.welcomed(again))
        #expect(JoinApprovalTests.refusal(again) == nil)

        // A new member connection's gossip leaves it out too.
        sponsor.membership.peerDisconnected(sponsor.bob.staticKey)
        _ = sponsor.actions()
        sponsor.membership.peerConnected(sponsor.bob.staticKey, address: sponsor.bob.addresses[0])
        let gossip = JoinApprovalTests.sent(sponsor.actions(), to: sponsor.bob.staticKey)
        #expect(
            !gossip.contains { message in
                if case .invitationOpened(let grant) = message { grant.id == limited.id } else { false }
            })
    }

    @Test("A single-use ask-to-join invitation: the first joiner admitted takes the use, the second is told it closed")
    func singleUseAskToJoin() throws {
        var sponsor = try JoinApprovalTests.Sponsor()
        let limited = try InvitationGrant(
            secret: EndpointPair.secret(6), expiresAt: .max, requiresApproval: true, uses: 1)
        sponsor.membership.openInvitation(limited)
        _ = sponsor.actions()
        var joiners: [MemberRecord] = []
        for (index, name) in ["cara", "dan"].enumerated() {
            let joiner = sponsor.joiner(name, address: UInt8(40 + index))
            joiners.append(joiner)
            sponsor.membership.peerConnected(joiner.staticKey, address: joiner.addresses[0], admitted: true)
            try sponsor.membership.receive(
                MembershipMessage.joinRequest(session: sponsor.session, invitation: limited.id, member: joiner)
                    .encoded(), from: joiner.staticKey, admission: limited.id)
        }
        _ = sponsor.actions()
        #expect(sponsor.membership.pendingJoinRequests == joiners)
        for joiner in joiners {
            let answered = sponsor.membership.answerJoinRequest(joiner.identity.signingKey, admit: true)
            #expect(answered)
        }
        let actions = sponsor.actions()
        #expect(JoinApprovalTests.welcomed(JoinApprovalTests.sent(actions, to: joiners[0].staticKey)))
        #expect(
            JoinApprovalTests.refusal(JoinApprovalTests.sent(actions, to: joiners[1].staticKey)) == .invitationClosed)
    }
}
