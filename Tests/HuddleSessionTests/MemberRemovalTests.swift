import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// Removing a member, driven on ``SessionMembership`` directly: who may, what the removed member can still do (nothing
/// that gets it back in), and the session admission's new key.
@Suite("Removing a member and rotating the admission key")
struct MemberRemovalTests {
    /// A founder (the creator, with a charter) and members admitted through its invitation.
    struct Founder {
        var membership: SessionMembership
        var random = ChaChaRandomGenerator(seed: 301)
        let identity: Identity
        let invitation: InvitationGrant
        let session: SessionID

        init(policy: SessionCharter.RemovalPolicy = .creatorOnly) throws {
            var random = ChaChaRandomGenerator(seed: 300)
            identity = Identity(using: &random)
            let charter = SessionCharter(
                signingKey: identity.signingKey, nonce: random.bytes(count: SessionCharter.nonceLength),
                policy: policy)
            session = charter.session
            let local = MemberRecord(
                identity: identity.publicIdentity, name: "founder", addresses: [EndpointPair.address(1)], epoch: 0)
            membership = SessionMembership(
                starting: session, local: local, sessionSecret: EndpointPair.secret(1), charter: charter)
            invitation = try InvitationGrant(secret: EndpointPair.secret(2), expiresAt: .max)
            membership.openInvitation(invitation)
            _ = actions()
        }

        /// A member admitted under the invitation (connected here), with its identity.
        mutating func admit(_ name: String, address: UInt8) throws -> (record: MemberRecord, identity: Identity) {
            let identity = Identity(using: &random)
            let joiner = MemberRecord(
                identity: identity.publicIdentity, name: name, addresses: [EndpointPair.address(address)], epoch: 0)
            membership.peerConnected(joiner.staticKey, address: joiner.addresses[0], admitted: true)
            try membership.receive(
                MembershipMessage.joinRequest(session: session, invitation: invitation.id, member: joiner).encoded(),
                from: joiner.staticKey, admission: invitation.id)
            _ = actions()
            return (membership.member(joiner.staticKey)!, identity)
        }

        mutating func actions() -> [MembershipAction] {
            var actions: [MembershipAction] = []
            while let action = membership.pollAction() { actions.append(action) }
            return actions
        }
    }

    /// The membership messages among `actions` sent to `key`.
    static func sent(_ actions: [MembershipAction], to key: X25519PublicKey) -> [MembershipMessage] {
        actions.compactMap { action in
            guard case .send(let bytes, let peer) = action, peer == key else { return nil }
            return try? MembershipMessage(decoding: bytes)
        }
    }

    @Test(
        "The creator removes a member: it is told, reported removed, shut out; invitations close; a new admission key")
    func creatorRemoves() throws {
        var founder = try Founder()
        let (ann, _) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        let admissionBefore = try #require(founder.membership.sessionAdmission)

        let removal = MemberRemoval(
            session: founder.session, removing: ann.identity.signingKey, signingKey: founder.identity.signingKey)
        let removed = founder.membership.remove(removal)
        #expect(removed)
        let actions = founder.actions()
        // Both ann (so it learns it) and bob get the signed removal.
        for key in [ann.staticKey, bob.staticKey] {
            #expect(Self.sent(actions, to: key).contains { if case .memberRemoved = $0 { true } else { false } })
        }
        #expect(actions.contains { if case .participantLeft(ann, .removed) = $0 { true } else { false } })
        #expect(actions.contains { if case .closeAdmission(founder.invitation.id) = $0 { true } else { false } })
        #expect(founder.membership.openInvitations.isEmpty)
        #expect(actions.contains { if case .rotateAdmission = $0 { true } else { false } })
        #expect(!founder.membership.activeMembers.contains(ann))

        // The rotation: the old session admission closes, a new one opens, and only bob hears the key.
        founder.membership.rotateAdmission(secret: EndpointPair.secret(9))
        let rotation = founder.actions()
        #expect(rotation.contains { if case .closeAdmission(admissionBefore) = $0 { true } else { false } })
        let admissionAfter = try #require(founder.membership.sessionAdmission)
        #expect(admissionAfter != admissionBefore)
        #expect(founder.membership.admissionEpoch == 1)
        #expect(Self.sent(rotation, to: bob.staticKey).contains { if case .admissionKey = $0 { true } else { false } })
        #expect(Self.sent(rotation, to: ann.staticKey).isEmpty)

        // Ann's ways back. The invitation it knew is closed; a ticket made after the removal does not let its
        // identity in either; nor does its record announced by a member.
        #expect(throws: MembershipError.notInvited) {
            try founder.membership.receive(
                MembershipMessage.joinRequest(session: founder.session, invitation: founder.invitation.id, member: ann)
                    .encoded(), from: ann.staticKey, admission: founder.invitation.id)
        }
        let later = try InvitationGrant(secret: EndpointPair.secret(3), expiresAt: .max)
        founder.membership.openInvitation(later)
        _ = founder.actions()
        #expect(throws: MembershipError.removedMember) {
            try founder.membership.receive(
                MembershipMessage.joinRequest(session: founder.session, invitation: later.id, member: ann).encoded(),
                from: ann.staticKey, admission: later.id)
        }
        var again = ann
        again.epoch = 100
        try founder.membership.receive(
            MembershipMessage.memberJoined(again).encoded(), from: bob.staticKey, admission: nil)
        #expect(!founder.actions().contains { if case .participantJoined = $0 { true } else { false } })
        #expect(founder.membership.removedRefused == 2)
        // Anything it says over a connection still open is a violation (it closes that connection only).
        #expect(throws: MembershipError.removedMember) {
            try founder.membership.receive(
                MembershipMessage.memberJoined(again).encoded(), from: ann.staticKey, admission: nil)
        }
    }

    @Test("A member the policy does not allow cannot remove: locally nothing happens, and its message is a violation")
    func policyEnforced() throws {
        var founder = try Founder(policy: .creatorOnly)
        let (ann, annIdentity) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        let byAnn = MemberRemoval(
            session: founder.session, removing: bob.identity.signingKey, signingKey: annIdentity.signingKey)
        #expect(throws: MembershipError.self) {
            try founder.membership.receive(
                MembershipMessage.memberRemoved(byAnn).encoded(), from: ann.staticKey, admission: nil)
        }
        #expect(founder.membership.activeMembers.contains(bob))
        // A removal whose signature does not match its author is refused too, whoever relays it.
        let forged = MemberRemoval(
            author: founder.identity.publicIdentity.signingKey, removed: bob.identity.signingKey,
            signature: byAnn.signature)
        #expect(throws: MembershipError.self) {
            try founder.membership.receive(
                MembershipMessage.memberRemoved(forged).encoded(), from: ann.staticKey, admission: nil)
        }
        #expect(founder.membership.activeMembers.contains(bob))
        // Removing itself, or someone the roster never had, is refused.
        let removedSelf = founder.membership.remove(
            MemberRemoval(
                session: founder.session, removing: founder.identity.publicIdentity.signingKey,
                signingKey: founder.identity.signingKey))
        #expect(!removedSelf)
        var random = ChaChaRandomGenerator(seed: 302)
        let removedStranger = founder.membership.remove(
            MemberRemoval(
                session: founder.session, removing: Identity(using: &random).publicIdentity.signingKey,
                signingKey: founder.identity.signingKey))
        #expect(!removedStranger)
    }

    @Test("Under the any-member policy a member's removal is taken and relayed; the removed member's own node stops")
    func anyMemberRemovesAndRemovedNodeStops() throws {
        var founder = try Founder(policy: .anyMember)
        let (ann, annIdentity) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        let (cay, _) = try founder.admit("cay", address: 4)
        let byAnn = MemberRemoval(
            session: founder.session, removing: bob.identity.signingKey, signingKey: annIdentity.signingKey)
        try founder.membership.receive(
            MembershipMessage.memberRemoved(byAnn).encoded(), from: ann.staticKey, admission: nil)
        let actions = founder.actions()
        #expect(actions.contains { if case .participantLeft(bob, .removed) = $0 { true } else { false } })
        // Relayed to cay (it may not have heard from ann), not back to ann; not the founder's rotation to make.
        #expect(Self.sent(actions, to: cay.staticKey).contains { if case .memberRemoved = $0 { true } else { false } })
        #expect(Self.sent(actions, to: ann.staticKey).isEmpty)
        #expect(!actions.contains { if case .rotateAdmission = $0 { true } else { false } })
        // The same removal again (gossip on every connection) changes nothing.
        try founder.membership.receive(
            MembershipMessage.memberRemoved(byAnn).encoded(), from: cay.staticKey, admission: nil)
        #expect(founder.actions().isEmpty)
        // A removal of the founder itself ends its part in the session.
        let ofFounder = MemberRemoval(
            session: founder.session, removing: founder.identity.publicIdentity.signingKey,
            signingKey: annIdentity.signingKey)
        try founder.membership.receive(
            MembershipMessage.memberRemoved(ofFounder).encoded(), from: cay.staticKey, admission: nil)
        #expect(founder.membership.phase == .removed)
        #expect(founder.actions().contains { if case .removed(by: ann) = $0 { true } else { false } })
    }

    @Test("Concurrent admission keys converge everywhere, in any order of arrival")
    func admissionKeysConverge() throws {
        var founder = try Founder()
        let (_, annIdentity) = try founder.admit("ann", address: 2)
        let (_, bobIdentity) = try founder.admit("bob", address: 3)

        // Keys of one epoch from different authors, and two of one author (it restarted and drew again): the order
        // is total, so every order of arrival ends on the same key.
        let keys = [
            AdmissionKey(epoch: 5, author: annIdentity.publicIdentity.signingKey, secret: EndpointPair.secret(21)),
            AdmissionKey(epoch: 5, author: bobIdentity.publicIdentity.signingKey, secret: EndpointPair.secret(22)),
            AdmissionKey(epoch: 5, author: bobIdentity.publicIdentity.signingKey, secret: EndpointPair.secret(23)),
            AdmissionKey(epoch: 4, author: bobIdentity.publicIdentity.signingKey, secret: EndpointPair.secret(24)),
        ]
        var ends: Set<AdmissionID> = []
        for order in [keys, keys.reversed(), [keys[2], keys[0], keys[3], keys[1]]] {
            var member = try Founder()
            let (peer, _) = try member.admit("peer", address: 5)
            for key in order {
                try member.membership.receive(
                    MembershipMessage.admissionKey(key).encoded(), from: peer.staticKey, admission: nil)
            }
            #expect(member.membership.admissionEpoch == 5)
            ends.insert(try #require(member.membership.sessionAdmission))
        }
        #expect(ends.count == 1)
    }

    @Test("An invitation a removal closed stays closed when a member that missed the removal offers it again")
    func revokedInvitationStaysClosed() throws {
        var founder = try Founder()
        let (ann, _) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        founder.membership.remove(
            MemberRemoval(
                session: founder.session, removing: ann.identity.signingKey, signingKey: founder.identity.signingKey))
        _ = founder.actions()
        // Bob gossips the invitations it still has open (as on every new connection).
        try founder.membership.receive(
            MembershipMessage.invitationOpened(founder.invitation).encoded(), from: bob.staticKey, admission: nil)
        #expect(founder.membership.openInvitations.isEmpty)
        #expect(!founder.actions().contains { if case .openAdmission = $0 { true } else { false } })
        // A new one opens as usual, and new connections carry it.
        let later = try InvitationGrant(secret: EndpointPair.secret(3), expiresAt: .max)
        try founder.membership.receive(
            MembershipMessage.invitationOpened(later).encoded(), from: bob.staticKey, admission: nil)
        #expect(founder.membership.openInvitations.map(\.id) == [later.id])
    }

    @Test("After a rotation members are dialled under the admission's key or their own credentials, as asked")
    func dialCredentials() throws {
        var founder = try Founder()
        let (ann, _) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        // At epoch 0 both are the members' own: nothing to switch.
        #expect(founder.membership.dialCredentials(for: bob.staticKey, underAdmission: true) == nil)
        founder.membership.remove(
            MemberRemoval(
                session: founder.session, removing: ann.identity.signingKey, signingKey: founder.identity.signingKey))
        founder.membership.rotateAdmission(secret: EndpointPair.secret(9))
        let underKey = try #require(founder.membership.dialCredentials(for: bob.staticKey, underAdmission: true))
        let own = try #require(founder.membership.dialCredentials(for: bob.staticKey, underAdmission: false))
        let expectedKey = try SessionKeys.memberCredentials(sessionSecret: EndpointPair.secret(9), peer: bob.staticKey)
        let expectedOwn = try SessionKeys.memberCredentials(sessionSecret: EndpointPair.secret(1), peer: bob.staticKey)
        #expect(underKey.presharedKey.constantTimeEquals(expectedKey.presharedKey))
        #expect(own.presharedKey.constantTimeEquals(expectedOwn.presharedKey))
        #expect(!underKey.presharedKey.constantTimeEquals(own.presharedKey))
    }

    @Test("A revoked invitation closes here and at every member, is relayed once, and never opens again")
    func revokeInvitation() throws {
        var founder = try Founder()
        let (ann, _) = try founder.admit("ann", address: 2)
        let (bob, _) = try founder.admit("bob", address: 3)
        let revoked = founder.membership.revokeInvitation(founder.invitation.id)
        #expect(revoked)
        let actions = founder.actions()
        #expect(actions.contains { if case .closeAdmission(founder.invitation.id) = $0 { true } else { false } })
        for key in [ann.staticKey, bob.staticKey] {
            #expect(Self.sent(actions, to: key).contains { if case .invitationsRevoked = $0 { true } else { false } })
        }
        #expect(founder.membership.openInvitations.isEmpty)
        // Offered again (a member that missed the revocation gossips it): stays closed; a join under it is refused.
        try founder.membership.receive(
            MembershipMessage.invitationOpened(founder.invitation).encoded(), from: bob.staticKey, admission: nil)
        #expect(founder.membership.openInvitations.isEmpty)
        var random = ChaChaRandomGenerator(seed: 305)
        let joiner = MemberRecord(
            identity: Identity(using: &random).publicIdentity, name: "late", addresses: [EndpointPair.address(9)],
            epoch: 0)
        // A joiner whose handshake under it beat the revocation is told why (JOIN_REFUSED 2), not let in.
        try founder.membership.receive(
            MembershipMessage.joinRequest(session: founder.session, invitation: founder.invitation.id, member: joiner)
                .encoded(), from: joiner.staticKey, admission: founder.invitation.id)
        let refusal = Self.sent(founder.actions(), to: joiner.staticKey)
        #expect(refusal.contains { if case .joinRefused(.invitationClosed) = $0 { true } else { false } })
        #expect(!refusal.contains { if case .welcome = $0 { true } else { false } })
        // Named by a peer that came in otherwise, it is a violation as before.
        #expect(throws: MembershipError.notInvited) {
            try founder.membership.receive(
                MembershipMessage.joinRequest(
                    session: founder.session, invitation: founder.invitation.id, member: joiner
                )
                .encoded(), from: joiner.staticKey, admission: AdmissionID(12345))
        }
        // Another member's revocation: taken, relayed to the others but not back; the same again changes nothing.
        let other = try InvitationGrant(secret: EndpointPair.secret(4), expiresAt: .max)
        founder.membership.openInvitation(other)
        _ = founder.actions()
        try founder.membership.receive(
            MembershipMessage.invitationsRevoked([other.id]).encoded(), from: ann.staticKey, admission: nil)
        let relayed = founder.actions()
        #expect(relayed.contains { if case .closeAdmission(other.id) = $0 { true } else { false } })
        #expect(Self.sent(relayed, to: bob.staticKey).count == 1 && Self.sent(relayed, to: ann.staticKey).isEmpty)
        try founder.membership.receive(
            MembershipMessage.invitationsRevoked([other.id]).encoded(), from: bob.staticKey, admission: nil)
        #expect(founder.actions().isEmpty)
    }

    @Test("A charter that does not derive the session's id, or whose signature fails, is a violation")
    func charterChecked() throws {
        var founder = try Founder()
        let (ann, annIdentity) = try founder.admit("ann", address: 2)
        var random = ChaChaRandomGenerator(seed: 303)
        // Ann's own charter: validly signed, but for another session id.
        let foreign = SessionCharter(
            signingKey: annIdentity.signingKey, nonce: random.bytes(count: 16), policy: .anyMember)
        #expect(throws: MembershipError.invalidCharter) {
            try founder.membership.receive(
                MembershipMessage.charter(foreign).encoded(), from: ann.staticKey, admission: nil)
        }
        #expect(founder.membership.charter?.policy == .creatorOnly)
    }

    @Test("The new messages round-trip through their encoding")
    func encoding() throws {
        var random = ChaChaRandomGenerator(seed: 304)
        let identity = Identity(using: &random)
        let charter = SessionCharter(
            signingKey: identity.signingKey, nonce: random.bytes(count: 16), policy: .anyMember)
        guard case .charter(let decoded) = try MembershipMessage(decoding: MembershipMessage.charter(charter).encoded())
        else { Issue.record("not a charter"); return }
        #expect(decoded == charter && decoded.isValid(for: charter.session))
        let removal = MemberRemoval(
            session: charter.session, removing: identity.publicIdentity.signingKey, signingKey: identity.signingKey)
        guard
            case .memberRemoved(let back) = try MembershipMessage(
                decoding: MembershipMessage.memberRemoved(removal).encoded())
        else { Issue.record("not a removal"); return }
        #expect(back == removal && back.isValid(for: charter.session))
        let key = AdmissionKey(epoch: 300, author: identity.publicIdentity.signingKey, secret: EndpointPair.secret(7))
        guard
            case .admissionKey(let keyBack) = try MembershipMessage(
                decoding: MembershipMessage.admissionKey(key).encoded())
        else { Issue.record("not an admission key"); return }
        let ids = [AdmissionID(1), AdmissionID(.max)]
        guard
            case .invitationsRevoked(let idsBack) = try MembershipMessage(
                decoding: MembershipMessage.invitationsRevoked(ids).encoded())
        else {
            Issue.record("not a revocation")
            return
        }
        #expect(idsBack == ids)
        #expect(throws: MembershipError.self) { try MembershipMessage(decoding: [11, 0]) }
        #expect(keyBack.epoch == 300 && keyBack.author == key.author && keyBack.secret.constantTimeEquals(key.secret))
    }
}
