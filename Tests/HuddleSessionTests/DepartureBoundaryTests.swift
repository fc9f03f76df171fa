import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// A member that leaves, driven on ``SessionMembership`` directly: the admission key it kept moves on, drawn by the
/// member first in line, and nothing it kept lets it back in but an invitation (a bearer ticket, as for anyone).
@Suite("Leaving moves the admission key")
struct DepartureBoundaryTests {
    typealias Founder = MemberRemovalTests.Founder

    static func joined(_ actions: [MembershipAction]) -> [MemberRecord] {
        actions.compactMap { if case .participantJoined(let record) = $0 { record } else { nil } }
    }

    @Test("A departure asks for a new admission key: the member with the lowest Noise key draws at once, others wait")
    func departureRotates() throws {
        var founder = try Founder()
        let (ann, _) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        let (cara, _) = try founder.admit("cara", address: 4)
        try founder.membership.receive(
            MembershipMessage.memberLeft(signingKey: ann.identity.signingKey, epoch: ann.epoch).encoded(),
            from: ann.staticKey, admission: nil)
        // Its place: how many of the members still active (bob, cara and itself) sort before it.
        let local = founder.membership.local.staticKey
        let place = [bob.staticKey, cara.staticKey].filter { $0.bytes.lexicographicallyPrecedes(local.bytes) }.count
        let actions = founder.actions()
        #expect(actions.contains { if case .participantLeft(ann, .left) = $0 { true } else { false } })
        #expect(
            actions.contains {
                if case .rotateAdmissionAfterDeparture(place, 0) = $0 { true } else { false }
            })
        // A departure the roster does not hold (an older epoch) asks for nothing.
        try founder.membership.receive(
            MembershipMessage.memberLeft(signingKey: bob.identity.signingKey, epoch: bob.epoch + 7).encoded(),
            from: bob.staticKey, admission: nil)
        #expect(!founder.actions().contains { if case .rotateAdmissionAfterDeparture = $0 { true } else { false } })
    }

    @Test("A member that left cannot come back through its old connection or the admission key it left under")
    func leaverStaysOut() throws {
        var founder = try Founder()
        let (ann, _) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        let keptAdmission = try #require(founder.membership.sessionAdmission)
        try founder.membership.receive(
            MembershipMessage.memberLeft(signingKey: ann.identity.signingKey, epoch: ann.epoch).encoded(),
            from: ann.staticKey, admission: nil)
        _ = founder.actions()
        var again = ann
        again.epoch = 100

        // Its own record with a larger epoch over the connection that is still closing: refused, not a violation.
        try founder.membership.receive(
            MembershipMessage.memberJoined(again).encoded(), from: ann.staticKey, admission: nil)
        #expect(Self.joined(founder.actions()).isEmpty)
        #expect(founder.membership.selfAnnouncementsRefused == 1)
        // Under the session admission, whose key it kept, before the new key arrives here: refused too, as is a join
        // request there (which would skip an ask-to-join question).
        try founder.membership.receive(
            MembershipMessage.memberJoined(again).encoded(), from: ann.staticKey, admission: keptAdmission)
        #expect(Self.joined(founder.actions()).isEmpty)
        #expect(throws: MembershipError.notInvited) {
            try founder.membership.receive(
                MembershipMessage.joinRequest(session: founder.session, invitation: founder.invitation.id, member: ann)
                    .encoded(), from: ann.staticKey, admission: keptAdmission)
        }
        #expect(founder.membership.selfAnnouncementsRefused == 3)
        #expect(!founder.membership.isActiveParticipant(ann.staticKey))

        // The new key goes to bob only; the old admission closes.
        founder.membership.rotateAdmission(secret: EndpointPair.secret(9))
        let rotation = founder.actions()
        #expect(rotation.contains { if case .closeAdmission(keptAdmission) = $0 { true } else { false } })
        #expect(
            MemberRemovalTests.sent(rotation, to: bob.staticKey).contains {
                if case .admissionKey = $0 { true } else { false }
            })
        #expect(MemberRemovalTests.sent(rotation, to: ann.staticKey).isEmpty)

        // A ticket it holds is a bearer credential: a request under it is a new join, seen by every member.
        try founder.membership.receive(
            MembershipMessage.joinRequest(session: founder.session, invitation: founder.invitation.id, member: ann)
                .encoded(), from: ann.staticKey, admission: founder.invitation.id)
        #expect(Self.joined(founder.actions()).map(\.staticKey) == [ann.staticKey])
    }

    @Test("A peer under an ask-to-join or a limited invitation cannot announce itself past the question or the count")
    func selfAnnouncementNeedsAnOpenDoor() throws {
        var founder = try Founder()
        _ = try founder.admit("ann", address: 2)
        let ask = try InvitationGrant(secret: EndpointPair.secret(5), expiresAt: .max, requiresApproval: true)
        let limited = try InvitationGrant(secret: EndpointPair.secret(6), expiresAt: .max, uses: 1)
        founder.membership.openInvitation(ask)
        founder.membership.openInvitation(limited)
        _ = founder.actions()

        var random = ChaChaRandomGenerator(seed: 77)
        let stranger = MemberRecord(
            identity: Identity(using: &random).publicIdentity, name: "eve", addresses: [EndpointPair.address(9)],
            epoch: 40)
        founder.membership.peerConnected(stranger.staticKey, address: stranger.addresses[0], admitted: true)
        for admission in [ask.id, limited.id] {
            try founder.membership.receive(
                MembershipMessage.memberJoined(stranger).encoded(), from: stranger.staticKey, admission: admission)
            #expect(Self.joined(founder.actions()).isEmpty)
        }
        #expect(founder.membership.selfAnnouncementsRefused == 2)
        #expect(founder.membership.member(stranger.staticKey) == nil)
        // Under an invitation that lets anyone holding its ticket in at once, its own record stands for its sponsor's
        // announcement (the sponsor may have crashed before sending it).
        try founder.membership.receive(
            MembershipMessage.memberJoined(stranger).encoded(), from: stranger.staticKey,
            admission: founder.invitation.id)
        #expect(Self.joined(founder.actions()).map(\.staticKey) == [stranger.staticKey])
    }

    @Test("A joiner after a removal keeps the invitation its WELCOME lists, and redials under it in turn")
    func joinerAfterRemoval() throws {
        var founder = try Founder()
        let (ann, _) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        founder.membership.remove(
            MemberRemoval(
                session: founder.session, removing: ann.identity.signingKey, signingKey: founder.identity.signingKey))
        founder.membership.rotateAdmission(secret: EndpointPair.secret(9))
        let next = try InvitationGrant(secret: EndpointPair.secret(7), expiresAt: .max)
        founder.membership.openInvitation(next)
        _ = founder.actions()

        var random = ChaChaRandomGenerator(seed: 88)
        let record = MemberRecord(
            identity: Identity(using: &random).publicIdentity, name: "joe", addresses: [EndpointPair.address(7)],
            epoch: 0)
        let founderKey = founder.membership.local.staticKey
        var joe = try SessionMembership(
            joining: founder.session, local: record, invitationSecret: next.secret,
            members: [(founderKey, founder.membership.local.addresses)])
        while joe.pollAction() != nil {}
        joe.peerConnected(founderKey, address: EndpointPair.address(1))
        var request: [UInt8] = []
        while let action = joe.pollAction() {
            if case .send(let bytes, founderKey) = action { request = bytes }
        }
        founder.membership.peerConnected(record.staticKey, address: record.addresses[0], admitted: true)
        try founder.membership.receive(request, from: record.staticKey, admission: next.id)
        // The WELCOME, then the boundary: the charter, the removal, the admission key.
        let answers = founder.actions().compactMap { action -> [UInt8]? in
            if case .send(let bytes, record.staticKey) = action { bytes } else { nil }
        }
        for bytes in answers { try joe.receive(bytes, from: founderKey, admission: nil) }
        #expect(joe.phase == .member)
        #expect(joe.knowsRemoval(of: ann.identity.signingKey))
        #expect(joe.admissionEpoch == 1)
        // The removal came before the invitation was made; applying it behind the WELCOME closes nothing.
        #expect(joe.openInvitations.map(\.id) == [next.id])

        // Redials of bob, whom joe never reached, alternate between the admission's key and the members' own; the
        // second (and every sixth after it) takes the invitation joe joined with.
        let credentials = try (1...8).map { attempt in
            try #require(joe.redialCredentials(for: bob.staticKey, attempt: attempt))
        }
        let expected = [
            try SessionKeys.memberCredentials(sessionSecret: EndpointPair.secret(9), peer: bob.staticKey),
            try SessionKeys.joinerCredentials(invitationSecret: next.secret, member: bob.staticKey),
            try SessionKeys.memberCredentials(sessionSecret: EndpointPair.secret(1), peer: bob.staticKey),
        ]
        for (attempt, kind) in [(1, 0), (2, 1), (3, 0), (4, 2), (5, 0), (6, 2), (8, 1)] {
            #expect(
                credentials[attempt - 1].presharedKey.constantTimeEquals(expected[kind].presharedKey),
                "attempt \(attempt)")
        }
        // The founder, which joe reached (its sponsor), is never dialled under the invitation: the two know each
        // other.
        let second = try #require(joe.redialCredentials(for: founderKey, attempt: 2))
        let own = try SessionKeys.memberCredentials(sessionSecret: EndpointPair.secret(1), peer: founderKey)
        #expect(second.presharedKey.constantTimeEquals(own.presharedKey))
    }
}
