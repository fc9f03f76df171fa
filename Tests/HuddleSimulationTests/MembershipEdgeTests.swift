import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// Membership at its edges (issue 11; the cases the churn scenario's seeds 46, 59 and 147 found): a member nobody
/// was told about, a joiner whose first sponsor cannot answer, and gossip reaching a member that just left.
@Suite("Membership edges found by the churn scenario")
struct MembershipEdgeTests {
    static func connected(_ net: SimulatedNetwork<MemberNode>, _ a: Int, _ b: Int, _ session: TestSession) -> Bool {
        guard let core = net.node(a)?.core else { return false }
        return core.membership.isActiveMember(session.staticKey(b))
    }

    @Test("A member whose announcement never reached another member (its sponsor crashed) still meets it")
    func unannouncedMemberMeetsTheOthers() throws {
        var (net, session, _) = try MembershipTests.mesh(count: 3, seed: 31, joining: 2)
        #expect(
            try net.run(
                until: { net in (0..<2).allSatisfy { net.node($0)!.activeKeys.count == 2 } }, timeout: .seconds(10)))
        // Nothing from the sponsor (node 0) reaches node 1 any more: node 1 never hears of node 2 from it.
        net.setLink(from: 0, to: 1, up: false)
        let grant = session.invitation()
        let openAt = net.now
        try net.withNode(0) { $0.update(now: openAt) { $0.openInvitation(grant) } }
        let joining = session.joining(
            2, address: net.address(of: 2), grant: grant,
            hints: [(staticKey: session.staticKey(0), addresses: [net.address(of: 0)])])
        let joinAt = net.now
        try net.withNode(2) { $0.start(joining, now: joinAt) }
        #expect(
            try net.run(until: { $0.node(2)!.core?.membership.phase == .member }, timeout: .seconds(5)))
        // Right after its WELCOME node 2 sends node 1 a message; then its sponsor crashes for good.
        try net.withNode(2) { node in
            let sent = node.send(Array("hello".utf8), on: ChannelID(16), to: session.staticKey(1))
            #expect(sent)
        }
        net.crash(0)
        // Node 2 dials node 1 with the members' credentials; node 1 takes it in under the session admission and
        // learns its record from node 2 itself.
        #expect(
            try net.run(
                until: { net in Self.connected(net, 1, 2, session) && Self.connected(net, 2, 1, session) },
                timeout: .seconds(10)))
        try net.run(for: .seconds(1))
        #expect(net.node(1)!.messages.map(\.bytes) == [Array("hello".utf8)])
        #expect(net.node(1)!.core?.membershipViolations == 0)
        #expect(
            net.node(1)!.core?.membership.member(session.staticKey(2))?.epoch
                == net.node(2)!.core?.membership.local.epoch)
    }

    @Test("A joiner whose first sponsor is itself still joining asks another member and gets in")
    func joinerAsksAgain() throws {
        var session = TestSession(count: 3, seed: 37)
        var net = SimulatedNetwork(
            seed: 37, nodes: session.nodes(), conditions: LinkConditions(latency: .milliseconds(10)))
        let founding = session.founding(0, address: net.address(of: 0))
        let grant = session.invitation()
        try net.withNode(0) { node in
            node.start(founding, now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }
        // Each joiner's ticket names the other joiner first (both were members once) and the founder. Node 1 cannot
        // reach the founder for 3 s, so its first sponsor is node 2, which is joining too and cannot answer.
        net.setLink(from: 1, to: 0, up: false)
        net.schedule(at: .zero + .seconds(3)) { $0.heal() }
        for (index, other) in [(1, 2), (2, 1)] {
            let joining = session.joining(
                index, address: net.address(of: index), grant: grant,
                hints: [
                    (staticKey: session.staticKey(other), addresses: [net.address(of: other)]),
                    (staticKey: session.staticKey(0), addresses: [net.address(of: 0)]),
                ])
            try net.withNode(index) { $0.start(joining, now: .zero) }
        }
        let everyone = MembershipTests.allKeys(session, 0..<3)
        #expect(
            try net.run(
                until: { net in (0..<3).allSatisfy { net.node($0)!.activeKeys == everyone } }, timeout: .seconds(20)),
            "\((0..<3).map { net.node($0)!.core?.membership.phase == .member })")
        for index in 0..<3 {
            #expect(net.node(index)!.core?.membershipViolations == 0, "node \(index)")
            // Every member knows every other under the epoch that member has for itself.
            let membership = net.node(index)!.core!.membership
            for other in 0..<3 where other != index {
                #expect(
                    membership.member(session.staticKey(other))?.epoch
                        == net.node(other)!.core!.membership.local.epoch, "node \(index)'s view of \(other)")
            }
        }
    }

    @Test("An activity change that cannot reach one member directly reaches it through the others")
    func activityForwarded() throws {
        var (net, _, _) = try MembershipTests.mesh(count: 3, seed: 43)
        #expect(
            try net.run(
                until: { net in (0..<3).allSatisfy { net.node($0)!.activeKeys.count == 3 } }, timeout: .seconds(10)))
        // Node 1's packets to node 2 are lost (the connection would time out before they got through).
        net.setLink(from: 1, to: 2, up: false)
        let now = net.now
        try net.withNode(1) { $0.update(now: now) { $0.setActivity(Array("next".utf8)) } }
        #expect(
            try net.run(until: { $0.node(2)!.activityPayload == Array("next".utf8) }, timeout: .seconds(2)),
            "node 0 forwards what it adopted")
    }

    @Test("A member that just left ignores the gossip still reaching it (no protocol violation, nothing lost)")
    func leaverIgnoresGossip() throws {
        var (net, session, _) = try MembershipTests.mesh(count: 3, seed: 41)
        #expect(
            try net.run(
                until: { net in (0..<3).allSatisfy { net.node($0)!.activeKeys.count == 3 } }, timeout: .seconds(10)))
        // Node 2 sends node 1 a message, and node 1 leaves while node 2 changes the activity: the change reaches
        // node 1 after it left.
        try net.withNode(2) { node in
            let sent = node.send(Array("last words".utf8), on: ChannelID(16), to: session.staticKey(1))
            #expect(sent)
        }
        let now = net.now
        try net.withNode(1) { $0.update(now: now) { $0.leave() } }
        try net.withNode(2) { $0.update(now: now) { $0.setActivity(Array("next".utf8)) } }
        try net.run(for: .seconds(2))
        #expect(net.node(1)!.core?.membershipViolations == 0)
        #expect(net.node(1)!.messages.map(\.bytes) == [Array("last words".utf8)], "taken after leaving, not dropped")
    }
}
