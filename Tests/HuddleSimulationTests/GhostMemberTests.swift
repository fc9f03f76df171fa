import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// A member that crashed before this node heard of it (its record arrives in another member's gossip) must not stay
/// an active participant that nobody can reach until the transport's 90 s handshake timeout: after
/// ``ProtocolLimits/memberFirstContactTimeout`` without a handshake it is reported unreachable, and dialling goes on.
/// The churn schedule explorer found this at seed 188 once immediate acknowledgements changed the timing.
@Suite("A member learned of after it crashed")
struct GhostMemberTests {
    @Test("It is active at first, then reported unreachable within the first-contact timeout, staying in the roster")
    func ghostGoesUnreachable() throws {
        let count = 3
        var session = TestSession(count: count, seed: 77)
        let addresses = (0..<count).map { NetworkAddress(ipv4: 10, 0, 0, 1, port: UInt16(22_000 + $0)) }
        var net = SimulatedNetwork(
            seed: 77, nodes: session.nodes(), conditions: LinkConditions(latency: .milliseconds(5)),
            addresses: addresses)
        let grant = session.invitation()
        try net.withNode(0) { node in
            node.start(session.founding(0, address: addresses[0]), now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }
        let founder = [(staticKey: session.staticKey(0), addresses: [addresses[0]])]
        let joining = session.joining(1, address: addresses[1], grant: grant, hints: founder)
        try net.withNode(1) { $0.start(joining, now: .zero) }
        let pair = MembershipTests.allKeys(session, 0..<2)
        #expect(
            try net.run(
                until: { net in (0..<2).allSatisfy { net.node($0)?.activeKeys == pair } }, timeout: .seconds(10)))

        // Node 1 tells node 0 of a member (node 2) that is not running: a record node 0 has never seen.
        net.crash(2)
        let ghost = session.record(2, address: addresses[2])
        let told = net.now
        try net.withNode(0) { node in
            node.update(now: told) { membership in
                try? membership.receive(
                    MembershipMessage.memberJoined(ghost).encoded(), from: session.staticKey(1), admission: nil)
            }
        }
        #expect(net.node(0)?.core?.membership.isActiveParticipant(ghost.staticKey) == true)
        let gone = try net.run(
            until: { net in net.node(0)?.core?.membership.isActiveParticipant(ghost.staticKey) == false },
            timeout: .seconds(30))
        #expect(gone, "still active 30 s after it was named")
        #expect(net.now - told <= ProtocolLimits.memberFirstContactTimeout + .seconds(1), "\(net.now - told)")
        #expect(net.node(0)?.core?.membership.member(ghost.staticKey) != nil, "it stays in the roster")
    }
}
