import HuddleCrypto
@_spi(Testing) import HuddleProtocol
@_spi(Testing) import HuddleSession
import HuddleTestKit
import HuddleWire
import Testing

/// Members relaying for members (issue 39 item 4, PROTOCOL.md section 10.3), in the simulator: the session machine
/// that ships, with no dedicated relay and no TURN server anywhere.
@Suite("Members relay for members")
struct MemberRelayTests {
    /// Node 0 (public) founds the session; nodes 1 and 2 sit behind symmetric NATs (a new public port per
    /// destination, address-and-port-dependent filtering), so neither can reach the other directly; every other node
    /// is public. The others join through node 0 in `order`, `stagger` apart; the nodes in `notRelaying` have
    /// ``SessionMachine/relaysForMembers`` off.
    static func session(
        count: Int = 3, seed: UInt64, notRelaying: Set<Int> = [], order: [Int] = [1, 2], stagger: Duration = .zero,
        link: LinkConditions = LinkConditions(latency: .milliseconds(10))
    ) throws -> (net: SimulatedNetwork<MemberNode>, session: TestSession) {
        var session = TestSession(count: count, seed: seed)
        var net = SimulatedNetwork(seed: seed, nodes: session.nodes(), conditions: link)
        net.placeBehindNAT(1, SimulatedNAT(mapping: .endpointDependent, publicAddress: (198, 51, 100, 1)))
        net.placeBehindNAT(2, SimulatedNAT(mapping: .endpointDependent, publicAddress: (203, 0, 113, 1)))
        for index in notRelaying { try net.withNode(index) { $0.machine.relaysForMembers = false } }
        let founding = session.founding(0, address: net.address(of: 0))
        let grant = session.invitation()
        try net.withNode(0) { node in
            node.start(founding, now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }
        let hints = [(staticKey: session.staticKey(0), addresses: [net.address(of: 0)])]
        for (place, index) in order.enumerated() {
            let joining = session.joining(index, address: net.address(of: index), grant: grant, hints: hints)
            net.schedule(at: .zero + stagger * place) { net in
                let now = net.now
                _ = try? net.withNode(index) { $0.start(joining, now: now) }
            }
        }
        return (net, session)
    }

    /// Whether `node` received `bytes` from `sender`.
    static func received(_ bytes: [UInt8], from sender: X25519PublicKey, at node: MemberNode) -> Bool {
        node.events.contains { entry in
            guard case .message(let from, _, let payload) = entry.event else { return false }
            return from.staticKey == sender && payload == bytes
        }
    }

    @Test(
        "Two members behind symmetric NATs talk through a third they both reach, with no relay running",
        arguments: 1...5 as ClosedRange<UInt64>)
    func throughAThirdMember(seed: UInt64) throws {
        var (net, session) = try Self.session(seed: seed)
        let a = session.staticKey(1)
        let b = session.staticKey(2)
        let everyone = MembershipTests.allKeys(session, 0..<3)
        let connected = try net.run(
            until: { net in
                (0..<3).allSatisfy { net.node($0)!.activeKeys == everyone }
                    && [(1, b), (2, a)].allSatisfy { index, peer in
                        let endpoint = net.node(index)!.endpoint
                        return endpoint.connectionID(for: peer).flatMap { endpoint.connection($0) }?.state
                            == .established
                    }
            }, timeout: .seconds(10))
        #expect(connected, "active views: \((0..<3).map { net.node($0)!.activeKeys.count }) at \(net.now)")
        // Both ends of the pair went through node 0's address: its relay service, not a direct path.
        let relay = net.address(of: 0)
        for (index, peer) in [(1, b), (2, a)] {
            let endpoint = net.node(index)!.endpoint
            let route = endpoint.connectionID(for: peer).flatMap { endpoint.connection($0) }?.route
            #expect(route == .relayed(via: relay, peer: peer), "node \(index): \(String(describing: route))")
            #expect(
                endpoint.memberRelays(now: net.now).contains { $0.member == session.staticKey(0) && $0.isRegistered })
        }
        // Messages cross both ways, right after the connection came up.
        let toB = Array("through node 0".utf8)
        let toA = Array("and back".utf8)
        #expect(try net.withNode(1) { $0.send(toB, on: ChannelID(16), to: b) })
        #expect(try net.withNode(2) { $0.send(toA, on: ChannelID(16), to: a) })
        #expect(
            try net.run(
                until: { net in
                    Self.received(toB, from: a, at: net.node(2)!) && Self.received(toA, from: b, at: net.node(1)!)
                }, timeout: .seconds(5)))
        let forwarded = net.node(0)!.endpoint.relayServiceStatistics?.packetsForwarded ?? 0
        #expect(forwarded > 0)
        #expect(net.node(0)!.endpoint.relayServiceRegistrations == 2)
        for index in 0..<3 { #expect(net.node(index)!.core?.membershipViolations == 0) }
    }

    /// The same pair on lossy, jittery links (5 % loss, 5 ms jitter on every link, the relay's two hops included):
    /// 100 messages each way, sent as soon as the session formed, each arrive exactly once and in order.
    @Test(
        "Under 5 % loss the pair still meets through the third member; 100 messages each way arrive once, in order",
        arguments: 1...10 as ClosedRange<UInt64>)
    func underLoss(seed: UInt64) throws {
        let link = LinkConditions(latency: .milliseconds(10), jitter: .milliseconds(5), lossRate: 0.05)
        var (net, session) = try Self.session(seed: seed, link: link)
        let a = session.staticKey(1)
        let b = session.staticKey(2)
        let everyone = MembershipTests.allKeys(session, 0..<3)
        // Send right after both see the full roster, before their connection exists: the messages wait for it.
        #expect(
            try net.run(
                until: { net in (1..<3).allSatisfy { net.node($0)!.activeKeys == everyone } }, timeout: .seconds(20)))
        let lines = (0..<100).map { Array("line \($0)".utf8) }
        for line in lines {
            _ = try net.withNode(1) { $0.send(line, on: ChannelID(16), to: b) }
            _ = try net.withNode(2) { $0.send(line, on: ChannelID(16), to: a) }
        }
        func received(at index: Int, from sender: X25519PublicKey) -> [[UInt8]] {
            net.node(index)!.events.compactMap { entry in
                guard case .message(let from, _, let payload) = entry.event, from.staticKey == sender else {
                    return nil
                }
                return payload
            }
        }
        let arrived = try net.run(
            until: { net in
                [(2, a), (1, b)].allSatisfy { index, sender in
                    net.node(index)!.events.count { entry in
                        if case .message(let from, _, _) = entry.event { from.staticKey == sender } else { false }
                    } >= lines.count
                }
            }, timeout: .seconds(60))
        #expect(arrived, "at \(net.now)")
        #expect(received(at: 2, from: a) == lines)
        #expect(received(at: 1, from: b) == lines)
        let route = net.node(1)!.endpoint.connectionID(for: b).flatMap { net.node(1)!.endpoint.connection($0) }?.route
        #expect(route == .relayed(via: net.address(of: 0), peer: b))
        for index in 0..<3 { #expect(net.node(index)!.core?.membershipViolations == 0) }
    }

    /// Nodes 0, 3 and 4 are public, nodes 1 and 2 behind symmetric NATs; nodes 0 and 3 do not relay (an opted-out
    /// member, or a version without member relays, answers no REGISTER). Of the three public members the NATed two
    /// reach, each picks the two lowest keys, so at least one pick does not relay: it is passed over after
    /// ``ProtocolLimits/memberRelayConfirmTimeout`` without an answer, and both end registered with node 4 alone.
    @Test(
        "A member that does not relay is passed over after its wait; the pair meets through the one that does",
        arguments: 1...3 as ClosedRange<UInt64>)
    func passesOverMembersThatDoNotRelay(seed: UInt64) throws {
        // The public members first, so the NATed pair finds all three in the roster it is welcomed with.
        var (net, session) = try Self.session(
            count: 5, seed: seed, notRelaying: [0, 3], order: [3, 4, 1, 2], stagger: .milliseconds(300))
        let a = session.staticKey(1)
        let b = session.staticKey(2)
        let relaying = session.staticKey(4)
        let met = try net.run(
            until: { net in
                [(1, b), (2, a)].allSatisfy { index, peer in
                    let endpoint = net.node(index)!.endpoint
                    return endpoint.connectionID(for: peer).flatMap { endpoint.connection($0) }?.state == .established
                }
            }, timeout: .seconds(15))
        #expect(met, "at \(net.now)")
        // Past every wait: each registration has been confirmed or passed over.
        try net.run(until: .zero + .seconds(1) + ProtocolLimits.memberRelayConfirmTimeout * 2)
        for (index, peer) in [(1, b), (2, a)] {
            let endpoint = net.node(index)!.endpoint
            let route = endpoint.connectionID(for: peer).flatMap { endpoint.connection($0) }?.route
            #expect(
                route == .relayed(via: net.address(of: 4), peer: peer), "node \(index): \(String(describing: route))")
            let relays = endpoint.memberRelays(now: net.now)
            #expect(relays.map(\.member) == [relaying], "node \(index) keeps only the member that relays")
            #expect(relays.allSatisfy { $0.isRegistered })
        }
        for index in [0, 3] { #expect(net.node(index)!.endpoint.relayServiceStatistics == nil) }
        let toB = Array("through node 4".utf8)
        #expect(try net.withNode(1) { $0.send(toB, on: ChannelID(16), to: b) })
        #expect(try net.run(until: { net in Self.received(toB, from: a, at: net.node(2)!) }, timeout: .seconds(5)))
    }

    @Test("With relaying off, the same two members never meet: the relay in the test above is the third member")
    func withoutRelayingTheyNeverMeet() throws {
        var (net, session) = try Self.session(seed: 1, notRelaying: [0, 1, 2])
        let a = session.staticKey(1)
        let b = session.staticKey(2)
        try net.run(until: net.now + .seconds(10))
        for (index, peer) in [(1, b), (2, a)] {
            let endpoint = net.node(index)!.endpoint
            let state = endpoint.connectionID(for: peer).flatMap { endpoint.connection($0) }?.state
            #expect(state != .established, "node \(index)")
            #expect(endpoint.memberRelays(now: net.now).isEmpty)
        }
        #expect(net.node(0)!.endpoint.relayServiceStatistics == nil)
    }
}
