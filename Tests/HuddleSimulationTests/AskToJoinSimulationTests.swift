import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// Ask to join in the simulator, on the machine that ships: the sponsor crashes while the request waits, and the
/// joiner still gets in through another member once a third one admits it. Each seed draws the link latency and
/// when the sponsor crashes.
@Suite("Asking to join while the sponsor crashes")
struct AskToJoinSimulationTests {
    @Test("The joiner asks the next member, which keeps it waiting; a third member admits it", arguments: 1...4)
    func sponsorCrashes(seed: UInt64) throws {
        var random = SimulationRandom(seed: seed ^ 0xA5C)
        let count = 4
        var session = TestSession(count: count, seed: seed)
        let addresses = (0..<count).map { NetworkAddress(ipv4: 10, 0, 0, 1, port: UInt16(21_000 + $0)) }
        var net = SimulatedNetwork(
            seed: seed, nodes: session.nodes(),
            conditions: LinkConditions(latency: .milliseconds(Int64(random.integer(in: 1...20))), lossRate: 0.02),
            addresses: addresses)
        let grant = session.invitation()
        try net.withNode(0) { node in
            node.start(session.founding(0, address: addresses[0]), now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }
        let founder = [(staticKey: session.staticKey(0), addresses: [addresses[0]])]
        for index in 1...2 {
            let joining = session.joining(index, address: addresses[index], grant: grant, hints: founder)
            let now = net.now
            try net.withNode(index) { $0.start(joining, now: now) }
        }
        let members = MembershipTests.allKeys(session, 0..<3)
        #expect(
            try net.run(
                until: { net in (0..<3).allSatisfy { net.node($0)?.activeKeys == members } }, timeout: .seconds(30)),
            "the three members never formed")

        // An ask-to-join invitation by the founder; the joiner's ticket names the founder first, then member 1.
        var ask = session.invitation()
        ask.requiresApproval = true
        let opened = net.now
        try net.withNode(0) { node in node.update(now: opened) { $0.openInvitation(ask) } }
        try net.run(for: .milliseconds(200))
        let joiner = 3
        let hints = [0, 1].map { (staticKey: session.staticKey($0), addresses: [addresses[$0]]) }
        let joining = session.joining(joiner, address: addresses[joiner], grant: ask, hints: hints)
        let started = net.now
        try net.withNode(joiner) { $0.start(joining, now: started) }

        var events: [Int: [SessionEvent]] = [:]
        func collect(_ net: inout SimulatedNetwork<MemberNode>) throws {
            for index in 0..<count where net.node(index) != nil {
                events[index, default: []] += try net.withNode(index) { $0.takeEvents() }.map(\.event)
            }
        }
        func requested(_ index: Int) -> Bool {
            events[index, default: []].contains { if case .joinRequested = $0 { true } else { false } }
        }
        func waits() -> Int {
            events[joiner, default: []].filter { if case .waitingForApproval = $0 { true } else { false } }.count
        }
        // Every member hears of the request and the joiner waits; nobody let it in.
        let heard = net.now + .seconds(10)
        while !((0..<3).allSatisfy(requested) && waits() == 1), net.now < heard {
            try net.run(for: .milliseconds(10))
            try collect(&net)
        }
        #expect((0..<3).allSatisfy(requested) && waits() == 1, "members heard: \((0..<3).map(requested))")
        #expect(net.node(joiner)?.core?.membership.phase == .joining)

        // The sponsor crashes, now or a little later. The joiner notices its connection is gone and asks member 1.
        try net.run(for: .milliseconds(Int64(random.integer(in: 0...500))))
        net.crash(0)
        let crashed = net.now
        let asked = crashed + .seconds(90)
        while waits() < 2, net.now < asked {
            try net.run(for: .milliseconds(100))
            try collect(&net)
        }
        #expect(waits() == 2, "the joiner was not told to wait by the next member within 90 s of the crash")
        #expect(net.node(joiner)?.core?.membership.phase == .joining)

        // Member 2 (never the joiner's sponsor) admits it; member 1 lets it in.
        let joinerKey = session.record(joiner, address: addresses[joiner]).identity.signingKey
        var answered = false
        let now = net.now
        try net.withNode(2) { node in node.update(now: now) { answered = $0.answerJoinRequest(joinerKey, admit: true) }
        }
        #expect(answered)
        #expect(
            try net.run(
                until: { net in [1, 2, joiner].allSatisfy { net.node($0)?.core?.membership.phase == .member } },
                timeout: .seconds(30)), "the admitted joiner never became a member")
        #expect(
            try net.run(
                until: { net in
                    [1, 2, joiner].allSatisfy { net.node($0)?.activeKeys.contains(session.staticKey(joiner)) == true }
                },
                timeout: .seconds(30)))
        try collect(&net)
        // Both members report who admitted it; the joiner's wait did not run out.
        for index in [1, 2] {
            #expect(
                events[index, default: []].contains { event in
                    if case .joinRequestSettled(let record, .admitted(let by)) = event {
                        record.identity.signingKey == joinerKey && by.staticKey == session.staticKey(2)
                    } else {
                        false
                    }
                }, "member \(index)")
        }
        #expect(!events[joiner, default: []].contains { if case .joinTimedOut = $0 { true } else { false } })
        #expect(net.now - started < ProtocolLimits.joinApprovalTimeout + SessionTiming().joinTimeout)
    }
}
