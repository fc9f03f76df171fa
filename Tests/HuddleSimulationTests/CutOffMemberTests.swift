import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// Issue 34: a member that loses every connection at once (starved of CPU, or cut off from the network, for longer
/// than the idle timeout, so that it declares every other member unreachable and they declare it unreachable) must
/// heal: it redials and is redialled until the mesh is full again. Each seed draws the session's size (12-24 members
/// on one address), the member, how it is cut off and for how long.
@Suite("A member cut off from everyone at once")
struct CutOffMemberTests {
    @Test("It heals into the full mesh: everyone sees everyone and every pair is connected", arguments: 1...6)
    func heals(seed: UInt64) throws {
        var random = SimulationRandom(seed: seed ^ 0xC07_0FF)
        let count = random.integer(in: 12...24)
        var session = TestSession(count: count, seed: seed)
        let addresses = (0..<count).map { NetworkAddress(ipv4: 10, 0, 0, 1, port: UInt16(20_000 + $0)) }
        var net = SimulatedNetwork(
            seed: seed, nodes: session.nodes(), conditions: LinkConditions(latency: .milliseconds(5)),
            addresses: addresses)
        let grant = session.invitation()
        try net.withNode(0) { node in
            node.start(session.founding(0, address: addresses[0]), now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }
        let hints = [(staticKey: session.staticKey(0), addresses: [addresses[0]])]
        for index in 1..<count {
            let joining = session.joining(index, address: addresses[index], grant: grant, hints: hints)
            let now = net.now
            try net.withNode(index) { $0.start(joining, now: now) }
            try net.run(for: .milliseconds(Int64(random.integer(in: 0...100))))
        }
        let everyone = MembershipTests.allKeys(session, 0..<count)
        func full(_ net: SimulatedNetwork<MemberNode>) -> Bool {
            (0..<count).allSatisfy { index in
                guard let node = net.node(index), node.activeKeys == everyone, let membership = node.core?.membership
                else { return false }
                return (0..<count).allSatisfy { $0 == index || membership.isActiveMember(session.staticKey($0)) }
            }
        }
        #expect(try net.run(until: full, timeout: .seconds(30)), "the mesh never formed")

        let victim = random.integer(in: 0...(count - 1))
        let starved = random.chance(0.5)
        let cut = Duration.seconds(Int64(random.integer(in: 45...70)))
        if starved {
            net.pause(victim, for: cut)
        } else {
            net.partition([[victim], (0..<count).filter { $0 != victim }])
            net.schedule(at: net.now + cut) { $0.heal() }
        }
        try net.run(for: cut)
        // Everyone else gave up on it, and (isolated, its timers running) it on everyone.
        let victimKey = session.staticKey(victim)
        for index in 0..<count where index != victim {
            #expect(net.node(index)!.core?.membership.isActiveParticipant(victimKey) == false, "node \(index)")
        }
        let healed = try net.run(until: full, timeout: .seconds(60))
        let views = (0..<count).map { index -> String in
            let membership = net.node(index)!.core!.membership
            let connected = (0..<count).filter { membership.isActiveMember(session.staticKey($0)) }.count
            return "\(index): \(net.node(index)!.activeKeys.count) active, \(connected) connected"
        }
        #expect(
            healed,
            "\(count) members, node \(victim) \(starved ? "starved" : "isolated") \(cut): \(views.joined(separator: "; "))"
        )
    }
}
