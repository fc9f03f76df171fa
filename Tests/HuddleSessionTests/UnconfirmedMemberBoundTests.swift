import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// Any member holds the session secret and can make up identities, so a MEMBER_JOINED for someone not connected to
/// the receiver is only the sender's claim. Without a bound one hostile member could fill every node's roster with
/// made-up members (locking out every later join, since present members are never forgotten to make room) and have
/// every node dial their addresses. These tests drive a founder's ``SessionMembership`` directly.
@Suite("Member records one member can introduce")
struct UnconfirmedMemberBoundTests {
    static let session = SessionID(bytes: [UInt8](repeating: 7, count: SessionID.length))!

    /// A founder with an open invitation, and a way to make up members.
    struct Founder {
        var membership: SessionMembership
        var random = ChaChaRandomGenerator(seed: 99)
        let invitation: InvitationGrant
        var nextAddress: UInt8 = 10

        init() throws {
            var random = ChaChaRandomGenerator(seed: 98)
            let local = MemberRecord(
                identity: Identity(using: &random).publicIdentity, name: "founder",
                addresses: [EndpointPair.address(1)], epoch: 0)
            membership = SessionMembership(starting: session, local: local, sessionSecret: EndpointPair.secret(1))
            invitation = try InvitationGrant(secret: EndpointPair.secret(2), expiresAt: .max)
            membership.openInvitation(invitation)
            _ = actions()
        }

        /// A made-up member record with a valid identity binding.
        mutating func record(name: String) -> MemberRecord {
            nextAddress &+= 1
            return MemberRecord(
                identity: Identity(using: &random).publicIdentity, name: name,
                addresses: [EndpointPair.address(nextAddress)], epoch: 0)
        }

        /// A joiner that connects under the invitation and asks to join: a member from then on.
        mutating func admit(name: String) throws -> MemberRecord {
            let joiner = record(name: name)
            membership.peerConnected(joiner.staticKey, address: joiner.addresses[0], admitted: true)
            try membership.receive(
                MembershipMessage.joinRequest(session: session, invitation: invitation.id, member: joiner).encoded(),
                from: joiner.staticKey, admission: invitation.id)
            _ = actions()
            return membership.member(joiner.staticKey)!
        }

        /// `record` announced by `sender`; whether it became a participant here.
        mutating func announce(_ record: MemberRecord, from sender: X25519PublicKey) throws -> Bool {
            var announced = record
            announced.epoch = 1_000
            try membership.receive(
                MembershipMessage.memberJoined(announced).encoded(), from: sender, admission: nil)
            return actions().contains {
                if case .participantJoined(let joined) = $0 { joined.staticKey == record.staticKey } else { false }
            }
        }

        mutating func actions() -> [MembershipAction] {
            var actions: [MembershipAction] = []
            while let action = membership.pollAction() { actions.append(action) }
            return actions
        }
    }

    @Test("A member introduces at most the bound of members not connected here; the others are unaffected")
    func boundPerIntroducer() throws {
        var founder = try Founder()
        let hostile = try founder.admit(name: "hostile")
        let honest = try founder.admit(name: "honest")
        let limit = ProtocolLimits.maxUnconfirmedMembersPerIntroducer

        var made: [MemberRecord] = []
        var accepted = 0
        for index in 0..<(limit + 8) {
            let fake = founder.record(name: "fake \(index)")
            made.append(fake)
            if try founder.announce(fake, from: hostile.staticKey) { accepted += 1 }
        }
        #expect(accepted == limit)
        #expect(founder.membership.membersRefused == 8)
        #expect(founder.membership.roster.count == 3 + limit)

        // Another member's announcements still count against its own bound only.
        let friend = founder.record(name: "friend")
        #expect(try founder.announce(friend, from: honest.staticKey))
        // The same record again (gossip repeats it on every new connection) is a no-op, not a refusal (R6).
        #expect(try !founder.announce(friend, from: hostile.staticKey))
        #expect(founder.membership.membersRefused == 8)

        // One made-up member completing a handshake here is no longer a claim: the hostile member may introduce
        // one more, and no more than that.
        founder.membership.peerConnected(made[0].staticKey, address: made[0].addresses[0])
        _ = founder.actions()
        #expect(try founder.announce(founder.record(name: "one more"), from: hostile.staticKey))
        #expect(try !founder.announce(founder.record(name: "too many"), from: hostile.staticKey))

        // A refused member that is real still gets in: it reaches this node through the session admission and
        // sends its own record, which is always taken.
        let refused = made[limit]
        #expect(founder.membership.member(refused.staticKey) == nil)
        founder.membership.peerConnected(
            refused.staticKey, address: refused.addresses[0], admitted: true)
        try founder.membership.receive(
            MembershipMessage.memberJoined(refused).encoded(), from: refused.staticKey,
            admission: founder.membership.sessionAdmission)
        #expect(founder.membership.member(refused.staticKey) != nil)
    }

    @Test("A roster full of present members refuses a forwarded record without closing the forwarder")
    func fullRoster() throws {
        var founder = try Founder()
        let forwarder = try founder.admit(name: "forwarder")
        // Fill the roster with members that connected here, so none is a claim any more.
        while founder.membership.roster.count < ProtocolLimits.maxRosterEntries {
            let member = founder.record(name: "member")
            #expect(try founder.announce(member, from: forwarder.staticKey))
            founder.membership.peerConnected(member.staticKey, address: member.addresses[0])
            _ = founder.actions()
        }
        let refusedBefore = founder.membership.membersRefused
        #expect(try !founder.announce(founder.record(name: "late"), from: forwarder.staticKey))
        #expect(founder.membership.membersRefused == refusedBefore + 1)
        // A join request at the limit is a typed error (the core closes that joiner's connection).
        #expect(throws: MembershipError.self) { _ = try founder.admit(name: "joiner") }
    }

    /// Gossip repeats each record, so a record whose identity the roster already holds skips the binding check (it
    /// was checked when it came in). The skip must key on the whole identity: a record for a known member whose
    /// binding was tampered with is still checked, and refused.
    @Test("A known member's record with a forged binding is refused; the same identity again is accepted")
    func knownIdentitySkipsOnlyTheSameBytes() throws {
        var founder = try Founder()
        let honest = try founder.admit(name: "honest")
        let other = try founder.admit(name: "other")
        var forged = honest
        var binding = honest.identity.binding
        binding[0] ^= 1
        forged.identity = PublicIdentity(
            signingKey: honest.identity.signingKey, agreementKey: honest.identity.agreementKey, binding: binding)
        #expect(throws: MembershipError.invalidIdentity) { _ = try founder.announce(forged, from: other.staticKey) }
        // The same identity at a later epoch (a rejoin told by another member) is news, and accepted.
        #expect(try founder.announce(honest, from: other.staticKey))
    }
}
