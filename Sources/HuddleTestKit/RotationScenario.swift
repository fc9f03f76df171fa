import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// What a removal costs a session of ``members`` members in the simulator (issue 36): everyone joins through the
/// founder's ticket in bursts of 8 over a 20 ms round trip with 2 % loss each way, the session settles into its full
/// mesh, then the founder (the creator) removes the last member. Measured: when each remaining member knows of the
/// removal and holds the new admission key (from the removal, in milliseconds: p50, p95, the last), and the bytes each
/// remaining member sends for it (everything sent until 1 s after the last one holds the key, less what the idle
/// session sends in as long). Checked: every remaining member ends on one key, and the removed member learns of its removal.
///
/// With ``leaves`` the last member leaves instead (no removal): the same measures from its departure, and the key drawn
/// by the member first in line (``ProtocolLimits/departureRotationStagger``), so the final epoch is 1 when nobody
/// else had to draw.
public struct RotationScenario {
    /// The number of members, the departing one included.
    public var members: Int
    /// Whether the last member leaves (true) or the founder removes it (false).
    public var leaves: Bool

    /// A scenario of `members` members; `leaves`: the last one leaves instead of being removed.
    public init(members: Int, leaves: Bool = false) {
        self.members = members
        self.leaves = leaves
    }

    /// Member `victim` leaves, and the network runs until every other member knows of it and holds a new admission
    /// key (120 s at most), then 1 s more: when each did, from the departure.
    static func leavePhase(
        _ net: inout SimulatedNetwork<MemberNode>, victim: Int, victimKey: X25519PublicKey
    ) throws -> (knownAt: [Int: Duration], keyAt: [Int: Duration]) {
        let leftAt = net.now
        try net.withNode(victim) { $0.depart(now: leftAt) }
        let remaining = Array(0..<victim)
        var keyAt: [Int: Duration] = [:]
        var knownAt: [Int: Duration] = [:]
        let giveUp = leftAt + .seconds(120)
        while keyAt.count < remaining.count {
            try net.run(for: .milliseconds(1))
            for index in remaining {
                guard let view = net.node(index)?.core?.membership else { continue }
                if knownAt[index] == nil, !view.isActiveParticipant(victimKey) {
                    knownAt[index] = net.now - leftAt
                }
                if keyAt[index] == nil, view.admissionEpoch >= 1 { keyAt[index] = net.now - leftAt }
            }
            if net.now.nanoseconds % 100_000_000 == 0 {
                for index in 0...victim { _ = try net.withNode(index) { $0.takeEvents() } }
            }
            guard net.now < giveUp else {
                throw net.failure(
                    "\(remaining.count - keyAt.count) of \(remaining.count) members without a new key 120 s after a "
                        + "member left")
            }
        }
        try net.run(for: .seconds(1))
        return (knownAt, keyAt)
    }

    /// Runs the settled session for `duration`, taking every node's events. A function of its own (never inlined) so
    /// that `valgrind --tool=callgrind --toggle-collect='*idlePhase*'` counts its instructions alone
    /// (`make rotation-cpu`).
    @inline(never)
    static func idlePhase(_ net: inout SimulatedNetwork<MemberNode>, members: Int, for duration: Duration) throws {
        try net.run(for: duration)
        for index in 0..<members { _ = try net.withNode(index) { $0.takeEvents() } }
    }

    /// The founder removes member `victim` with `removal`, and the network runs until every other member knows of
    /// it and holds the new admission key, and `victim` learned of its removal (120 s at most), then 1 s more for
    /// what is still in flight: when each did, from the removal. Never inlined, for `--toggle-collect='*removalPhase*'` (`make rotation-cpu`).
    @inline(never)
    static func removalPhase(
        _ net: inout SimulatedNetwork<MemberNode>, removal: MemberRemoval, victim: Int
    ) throws -> (knownAt: [Int: Duration], keyAt: [Int: Duration]) {
        func membership(_ index: Int) -> SessionMembership? { net.node(index)?.core?.membership }
        let removedAt = net.now
        var removed = false
        try net.withNode(0) { node in node.update(now: removedAt) { removed = $0.remove(removal) } }
        guard removed else { throw net.failure("the founder could not remove member \(victim)") }
        let remaining = Array(0..<victim)
        var keyAt: [Int: Duration] = [0: .zero]
        var knownAt: [Int: Duration] = [0: .zero]
        var victimTold = false
        let giveUp = removedAt + .seconds(120)
        while keyAt.count < remaining.count || !victimTold {
            try net.run(for: .milliseconds(1))
            for index in remaining {
                guard let view = membership(index) else { continue }
                if knownAt[index] == nil, view.knowsRemoval(of: removal.removed) {
                    knownAt[index] = net.now - removedAt
                }
                if keyAt[index] == nil, view.admissionEpoch >= 1 { keyAt[index] = net.now - removedAt }
            }
            if !victimTold, membership(victim)?.phase == .removed { victimTold = true }
            if net.now.nanoseconds % 100_000_000 == 0 {
                for index in 0...victim { _ = try net.withNode(index) { $0.takeEvents() } }
            }
            guard net.now < giveUp else {
                throw net.failure(
                    "\(remaining.count - keyAt.count) of \(remaining.count) members without the new key, removed "
                        + "member \(victimTold ? "" : "not ")told, 120 s after the removal")
            }
        }
        // Then 1 s more: the relays and acknowledgements still in flight when the last member took the key belong to
        // the removal's cost too.
        try net.run(for: .seconds(1))
        return (knownAt, keyAt)
    }

    /// Runs one seed.
    public func run(seed: UInt64) throws -> ScenarioOutcome {
        let count = members
        var session = TestSession(count: count, seed: seed)
        let addresses = (0..<count).map { NetworkAddress(ipv4: 10, 0, 0, 1, port: UInt16(20_000 + $0)) }
        var net = SimulatedNetwork(
            seed: seed, nodes: session.nodes(),
            conditions: LinkConditions(latency: .milliseconds(10), lossRate: 0.02), addresses: addresses)
        let sent = LargeSessionScenario.ByteCounter()
        net.observeTransmits { _, transmit in sent.bytes += transmit.datagram.count }
        net.options = ["members \(count) on one address", "latency 10 ms", "loss 2 %"]
        let grant = session.invitation()
        try net.withNode(0) { node in
            node.start(session.founding(0, address: addresses[0]), now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }

        func drain() throws {
            for index in 0..<count { _ = try net.withNode(index) { $0.takeEvents() } }
        }
        func membership(_ index: Int) -> SessionMembership? { net.node(index)?.core?.membership }

        // Joins in bursts of 8 every 200 ms, each through the founder's hints.
        for start in stride(from: 1, to: count, by: 8) {
            let hints = membership(0)?.ticketHints(limit: 8) ?? []
            for index in start..<min(start + 8, count) {
                try net.restart(index, with: MemberNode(endpoint: session.endpoint(index, incarnation: 1)))
                let joining = session.joining(index, address: addresses[index], grant: grant, hints: hints)
                let now = net.now
                try net.withNode(index) { $0.start(joining, now: now) }
            }
            try net.run(for: .milliseconds(200))
            try drain()
        }
        // The full mesh: every member active and connected at every other.
        let keys = (0..<count).map { session.staticKey($0) }
        let meshBy = net.now + .seconds(600)
        while true {
            try net.run(for: .milliseconds(500))
            try drain()
            let meshed = (0..<count).allSatisfy { index in
                guard let view = membership(index), view.phase == .member else { return false }
                return keys.indices.allSatisfy { $0 == index || view.isActiveMember(keys[$0]) }
            }
            if meshed { break }
            guard net.now < meshBy else { throw net.failure("no full mesh of \(count) members within 600 s") }
        }
        // What the idle session sends in 5 s.
        let idleStart = (sent.bytes, net.now)
        try Self.idlePhase(&net, members: count, for: .seconds(5))
        let idleRate = Double(sent.bytes - idleStart.0) / ((net.now - idleStart.1) / .milliseconds(1))

        let victim = count - 1
        let removedAt = net.now
        let bytesBefore = sent.bytes
        let (knownAt, keyAt) =
            leaves
            ? try Self.leavePhase(&net, victim: victim, victimKey: session.staticKey(victim))
            : try Self.removalPhase(&net, removal: session.removal(of: victim), victim: victim)
        let remaining = Array(0..<victim)
        let window = net.now - removedAt
        let rotationBytes = Double(sent.bytes - bytesBefore) - idleRate * (window / .milliseconds(1))
        let ids = Set(remaining.compactMap { membership($0)?.sessionAdmission })
        guard ids.count == 1 else { throw net.failure("the remaining members hold \(ids.count) admission keys") }
        let epoch = membership(0)?.admissionEpoch ?? 0

        func milliseconds(_ values: [Duration], _ quantile: Double) -> Double {
            let sorted = values.sorted()
            let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * quantile).rounded(.up)))
            return sorted[index] / .milliseconds(1)
        }
        var outcome = ScenarioOutcome(simulatedTime: net.now - .zero, messagesDelivered: 0, bytesDelivered: 0)
        let keyTimes = Array(keyAt.values)
        outcome.measurements = [
            ("\(leaves ? "departure" : "removal") known p95 ms", milliseconds(Array(knownAt.values), 0.95)),
            ("new key p50 ms", milliseconds(keyTimes, 0.5)),
            ("new key p95 ms", milliseconds(keyTimes, 0.95)),
            ("new key last ms", milliseconds(keyTimes, 1)),
            ("bytes per member", max(0, rotationBytes) / Double(remaining.count)),
            ("final epoch", Double(epoch)),
        ]
        return outcome
    }
}
