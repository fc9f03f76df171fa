import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// The three waits the engine once kept on a wall clock (issue 32) are deadlines of the ``SessionMachine`` that ships:
/// here they run in virtual time, through the same machine the engine drives.
@Suite("The session machine's waits in virtual time")
struct SessionMachineWaitTests {
    /// The events of `node` of the given kind, with their times.
    static func times(_ node: MemberNode, _ matches: (SessionEvent) -> Bool) -> [Instant] {
        node.events.filter { matches($0.event) }.map(\.time)
    }

    @Test("A joiner nobody answers gets joinTimedOut at the join timeout, not before; a welcomed one never does")
    func joinTimeout() throws {
        var (net, session, _) = try MembershipTests.mesh(count: 3, seed: 3201, joining: 2)
        #expect(try net.run(until: { $0.node(1)!.core?.membership.phase == .member }, timeout: .seconds(5)))
        // Node 2 joins through a member that is gone: its ticket names only node 0, which crashed.
        net.crash(0)
        let grant = session.invitation()
        let joining = session.joining(
            2, address: net.address(of: 2), grant: grant,
            hints: [(staticKey: session.staticKey(0), addresses: [net.address(of: 0)])])
        let startedAt = net.now
        try net.withNode(2) { $0.start(joining, now: startedAt) }
        let timedOut: (SessionEvent) -> Bool = {
            if case .joinTimedOut = $0 { return true }
            return false
        }
        try net.run(for: SessionTiming().joinTimeout - .milliseconds(1))
        #expect(Self.times(net.node(2)!, timedOut).isEmpty, "timed out early")
        try net.run(for: .milliseconds(2))
        let times = Self.times(net.node(2)!, timedOut)
        #expect(times == [startedAt + SessionTiming().joinTimeout], "\(times)")
        #expect(
            net.node(2)!.events.contains {
                if case .joinTimedOut(let after) = $0.event { after == .seconds(30) } else { false }
            })
        // The welcomed joiner never times out.
        try net.run(for: .seconds(10))
        #expect(Self.times(net.node(1)!, timedOut).isEmpty)
    }

    @Test("A departure settles when every peer acknowledged it, or when the departure wait ends if one cannot")
    func departureSettles() throws {
        var (net, session, _) = try MembershipTests.mesh(count: 3, seed: 3202)
        let everyone = MembershipTests.allKeys(session, 0..<3)
        #expect(
            try net.run(
                until: { net in (0..<3).allSatisfy { net.node($0)!.activeKeys == everyone } }, timeout: .seconds(10)))
        let departed: (SessionEvent) -> Bool = {
            if case .departed = $0 { return true }
            return false
        }
        // Node 1 leaves with both peers reachable: settled once they acknowledged (a round trip on 10 ms links).
        var now = net.now
        try net.withNode(1) { $0.depart(now: now) }
        #expect(try net.run(until: { !Self.times($0.node(1)!, departed).isEmpty }, timeout: .seconds(5)))
        let settled = net.node(1)!.events.first { departed($0.event) }!
        #expect(settled.event.isAcknowledgedDeparture == true)
        #expect(settled.time - now < .milliseconds(100), "\(settled.time - now)")
        try net.withNode(1) { $0.finish(now: now) }
        net.crash(1)
        // Node 2 ends the session while node 0 cannot hear it: the wait ends at the departure timeout, unacknowledged.
        net.setLink(from: 2, to: 0, up: false)
        now = net.now
        try net.withNode(2) { $0.depart(endingSession: true, now: now) }
        #expect(try net.run(until: { !Self.times($0.node(2)!, departed).isEmpty }, timeout: .seconds(5)))
        let waited = net.node(2)!.events.first { departed($0.event) }!
        #expect(waited.event.isAcknowledgedDeparture == false)
        #expect(waited.time == now + SessionTiming().departureTimeout, "\(waited.time) vs \(now)")
    }

    @Test("The wait for a subscriber ends after its period, once per wait, unless a subscriber arrives")
    func subscriberWait() throws {
        var (net, _, _) = try MembershipTests.mesh(count: 2, seed: 3203)
        #expect(try net.run(until: { $0.node(1)!.core?.membership.phase == .member }, timeout: .seconds(5)))
        let over: (SessionEvent) -> Bool = {
            if case .subscriberWaitOver = $0 { return true }
            return false
        }
        let start = net.now
        try net.withNode(1) { $0.machine.waitForSubscriber(now: start) }
        // A second ask while waiting keeps the first deadline.
        try net.run(for: .seconds(1))
        let later = net.now
        try net.withNode(1) { $0.machine.waitForSubscriber(now: later) }
        try net.run(for: .seconds(5))
        #expect(Self.times(net.node(1)!, over) == [start + SessionTiming().subscriberWait])
        // A subscriber that arrives in time cancels the wait.
        let again = net.now
        try net.withNode(1) { $0.machine.waitForSubscriber(now: again) }
        try net.run(for: .seconds(2))
        try net.withNode(1) { $0.machine.subscriberArrived() }
        try net.run(for: .seconds(5))
        #expect(Self.times(net.node(1)!, over).count == 1)
    }
}

extension SessionEvent {
    /// For a `.departed` event, whether the departure was acknowledged; else `nil`.
    fileprivate var isAcknowledgedDeparture: Bool? {
        if case .departed(let acknowledged) = self { return acknowledged }
        return nil
    }
}
