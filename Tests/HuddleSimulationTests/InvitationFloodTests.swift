import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import HuddleWire
import Testing

/// Per-member bounds (issue 16, item 3): a member that opens invitations without end keeps at most
/// ``ProtocolLimits/maxOpenInvitationsPerMember`` of them open on every node and closes only its own, so the
/// other members' invitations keep working.
@Suite("A member flooding invitations")
struct InvitationFloodTests {
    @Test("70 invitations from one member: 16 stay open on the others, another member's ticket still lets a joiner in")
    func floodKeepsOthersInvitations() throws {
        var (net, session, grant) = try MembershipTests.mesh(count: 3, seed: 41, joining: 2)
        #expect(
            try net.run(
                until: { $0.node(0)!.activeKeys.count == 2 && $0.node(1)!.activeKeys.count == 2 }, timeout: .seconds(10)
            ))
        let flood = (0..<70).map { _ in session.invitation() }
        let floodAt = net.now
        try net.withNode(1) { node in
            node.update(now: floodAt) { membership in for grant in flood { membership.openInvitation(grant) } }
        }
        try net.run(for: .seconds(2))
        let founder = try #require(net.node(0)?.core?.membership)
        let floodIDs = Set(flood.map(\.id))
        let open = founder.openInvitations.filter { floodIDs.contains($0.id) }
        #expect(open.count == ProtocolLimits.maxOpenInvitationsPerMember)
        // The newest 16 survive (the flooder's oldest were closed first), and the founder's own is untouched.
        #expect(Set(open.map(\.id)) == Set(flood.suffix(ProtocolLimits.maxOpenInvitationsPerMember).map(\.id)))
        #expect(founder.openInvitations.contains { $0.id == grant.id })
        #expect(founder.invitationsEvicted == 70 - ProtocolLimits.maxOpenInvitationsPerMember)
        // The flooder keeps the same bound for itself.
        #expect(net.node(1)!.core!.membership.openInvitations.filter { floodIDs.contains($0.id) }.count == 16)

        // After the flood the founder invites node 2, which joins through it.
        let fresh = session.invitation()
        let inviteAt = net.now
        try net.withNode(0) { $0.update(now: inviteAt) { $0.openInvitation(fresh) } }
        let joining = session.joining(
            2, address: net.address(of: 2), grant: fresh,
            hints: [(staticKey: session.staticKey(0), addresses: [net.address(of: 0)])])
        let joinAt = net.now
        try net.withNode(2) { $0.start(joining, now: joinAt) }
        #expect(try net.run(until: { $0.node(2)!.core?.membership.phase == .member }, timeout: .seconds(5)))
    }
}
