import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire

/// A large session in the simulator (issue 34): ``members`` nodes on one IP address (distinct ports, as on one
/// machine or behind one NAT) join in bursts through the founder's ticket, then live through crashes, restarts,
/// graceful departures and a partition while sending reliable messages to random members, and a ``ChurnLedger``
/// checks every delivery and failure report as it happens.
///
/// Checked at the end, after everything healed and ``livenessPhase`` passed: every accepted message was delivered
/// once in order or reported, every survivor sees the same roster, and every pair of survivors is connected (the full
/// mesh). Measured: each first join's time to the full mesh (connected both ways with every member whose join began
/// before its own), and the bytes each member sends per second while the session is idle.
public struct LargeSessionScenario {
    /// The number of members.
    public var members: Int
    /// How long members crash, restart, leave and partition after the joins.
    public var churnPhase: Duration = .seconds(30)
    /// How long the healed network runs before the final checks: longer than the 90 s handshake timeout.
    public var livenessPhase: Duration = .seconds(100)
    /// How long the idle session is measured.
    public var idlePhase: Duration = .seconds(20)

    /// A scenario of `members` members.
    public init(members: Int) {
        self.members = members
    }

    static let channel = ChannelID(16)

    /// The driver's view of one member.
    struct Member {
        var incarnation = 0
        var alive = false
        var joined = false
        var counter: UInt32 = 0
        /// When its first join began, and the members whose joins began before it.
        var joinStarted: Instant?
        var joinedBefore: [Int] = []
        /// When it first stood in the full mesh with them.
        var meshedAt: Instant?
    }

    /// Counts what the nodes send, for the idle measurement.
    final class ByteCounter {
        var bytes = 0
    }

    /// Runs one seed.
    public func run(seed: UInt64) throws -> ScenarioOutcome {
        var random = SimulationRandom(seed: seed ^ 0x1A_46E5)
        let count = members
        let latency = Duration.milliseconds(Int64(random.integer(in: 1...10)))
        let lossRate = random.chance(0.5) ? Double(random.integer(in: 1...10)) / 1000 : 0
        var session = TestSession(count: count, seed: seed)
        // One host address, a port each: the per-address handshake limit sees every member as one source.
        let addresses = (0..<count).map { NetworkAddress(ipv4: 10, 0, 0, 1, port: UInt16(20_000 + $0)) }
        var net = SimulatedNetwork(
            seed: seed, nodes: session.nodes(), conditions: LinkConditions(latency: latency, lossRate: lossRate),
            addresses: addresses)
        let sentBytes = ByteCounter()
        net.observeTransmits { _, transmit in sentBytes.bytes += transmit.datagram.count }
        net.options = [
            "members \(count) on one address", "latency \(latency)", "loss \(lossRate)", "churn \(churnPhase)",
            "liveness \(livenessPhase)",
        ]
        let indexByKey = Dictionary(uniqueKeysWithValues: (0..<count).map { (session.staticKey($0), $0) })
        let grant = session.invitation()
        var state = [Member](repeating: Member(), count: count)
        var ledger = ChurnLedger()
        ledger.acknowledgementWindow = latency + ProtocolLimits.maxAckDelay + .milliseconds(50)

        try net.withNode(0) { node in
            node.start(session.founding(0, address: addresses[0]), now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }
        state[0].alive = true
        state[0].joined = true
        state[0].joinStarted = .zero
        state[0].meshedAt = .zero

        /// The ticket's hints: the founder's while it runs (everyone joins through the host's ticket, as in the
        /// issue), else any member's.
        func hints() -> [(staticKey: X25519PublicKey, addresses: [NetworkAddress])] {
            let order = [0] + (1..<count).map { $0 }
            for index in order where state[index].alive && state[index].joined {
                if let hints = net.node(index)?.core?.membership.ticketHints(limit: 8), !hints.isEmpty { return hints }
            }
            return []
        }

        func join(_ index: Int) throws {
            let known = hints()
            guard !known.isEmpty else { return }
            if state[index].joinStarted == nil {
                state[index].joinStarted = net.now
                state[index].joinedBefore = (0..<count).filter { $0 != index && state[$0].joinStarted != nil }
            }
            state[index].incarnation += 1
            state[index].alive = true
            state[index].joined = false
            state[index].counter = 0
            let endpoint = session.endpoint(index, incarnation: UInt64(state[index].incarnation))
            try net.restart(index, with: MemberNode(endpoint: endpoint))
            let membership = session.joining(index, address: addresses[index], grant: grant, hints: known)
            let now = net.now
            try net.withNode(index) { $0.start(membership, now: now) }
        }

        var stopped: [Int] = []
        var leaving: [(index: Int, incarnation: Int, at: Instant)] = []

        func stop(_ index: Int) {
            ledger.stopped(node: index, incarnation: state[index].incarnation, time: net.now)
            net.crash(index)
            state[index].alive = false
            stopped.append(index)
        }

        func collect() throws {
            for index in 0..<count where state[index].alive {
                let incarnation = state[index].incarnation
                for (time, event) in try net.withNode(index, { $0.takeEvents() }) {
                    ledger.record(event, node: index, incarnation: incarnation, time: time, channel: Self.channel)
                    switch event {
                    case .joined:
                        state[index].joined = true
                    case .joinFailed, .joinTimedOut:
                        stop(index)
                    case .departed:
                        let now = net.now
                        try net.withNode(index) { $0.finish(now: now) }
                        ledger.stopped(node: index, incarnation: incarnation, time: now)
                        if let entry = leaving.firstIndex(where: { $0.index == index && $0.incarnation == incarnation })
                        {
                            leaving[entry].at = now
                        }
                    default:
                        break
                    }
                }
            }
            ledger.classifyDeliveredAndReported(now: net.now) { net.lastDrop(from: $0, to: $1) }
        }

        /// Whether `a` and `b` are connected session members in each other's eyes.
        func connected(_ a: Int, _ b: Int) -> Bool {
            guard let left = net.node(a)?.core?.membership, let right = net.node(b)?.core?.membership else {
                return false
            }
            return left.isActiveMember(session.staticKey(b)) && right.isActiveMember(session.staticKey(a))
        }

        /// Records first joins that now stand in the full mesh with everyone who began joining before them.
        func noteMeshes() {
            for index in 0..<count where state[index].meshedAt == nil && state[index].alive && state[index].joined {
                let peers = state[index].joinedBefore.filter { state[$0].alive && state[$0].joined }
                if peers.allSatisfy({ connected(index, $0) }) { state[index].meshedAt = net.now }
            }
        }

        /// Each joined member sends one message to up to three random active members.
        func sendRound() throws {
            for index in 0..<count where state[index].alive && state[index].joined {
                guard let core = net.node(index)?.core, core.membership.phase == .member else { continue }
                let others = core.membership.activeMembers.dropFirst().map(\.staticKey)
                guard !others.isEmpty else { continue }
                let counter = state[index].counter
                state[index].counter += 1
                let bytes = ChurnLedger.payload(
                    sender: index, incarnation: state[index].incarnation, counter: counter,
                    size: random.integer(in: 8...2000))
                // Three distinct recipients (a message goes to a recipient once: the ledger counts deliveries).
                var picks = Set<Int>()
                while picks.count < min(3, others.count) { picks.insert(random.integer(in: 0...(others.count - 1))) }
                for pick in picks.sorted() {
                    let key = others[pick]
                    guard let recipient = indexByKey[key] else { continue }
                    let recipientIncarnation = state[recipient].alive ? state[recipient].incarnation : nil
                    let result = try net.withNode(index) { $0.sendRecorded(bytes, on: Self.channel, to: key) }
                    guard let (connection, sequence) = result else { continue }
                    ledger.sent(
                        sender: index, senderIncarnation: state[index].incarnation, counter: counter,
                        recipient: recipient, recipientIncarnation: recipientIncarnation, connection: connection,
                        sequence: sequence, time: net.now)
                }
            }
        }

        // Joins: bursts of 1-8 members every 100-400 ms through the founder's ticket, while the joined send.
        var queue = Array(1..<count)
        var step = 0
        while !queue.isEmpty {
            let burst = min(queue.count, random.integer(in: 1...8))
            for index in queue.prefix(burst) { try join(index) }
            queue.removeFirst(burst)
            let pause = Duration.milliseconds(Int64(random.integer(in: 100...400)))
            let until = net.now + pause
            // In 10 ms steps: the join-to-mesh times are measured to that resolution.
            while net.now < until {
                try net.run(for: .milliseconds(10))
                try collect()
                noteMeshes()
                step += 1
                if step % 50 == 0 { try sendRound() }
            }
        }
        // Until every first join stands in the mesh (or the handshake timeout has long passed).
        let meshDeadline = net.now + .seconds(120)
        while net.now < meshDeadline && state.contains(where: { $0.meshedAt == nil }) {
            try net.run(for: .milliseconds(10))
            try collect()
            noteMeshes()
        }
        let unmeshed = (0..<count).filter { state[$0].meshedAt == nil }
        guard unmeshed.isEmpty else {
            throw net.failure("\(unmeshed.count) member(s) never stood in the full mesh: \(unmeshed.prefix(10))")
        }
        let joinTimes = (1..<count).map { state[$0].meshedAt! - state[$0].joinStarted! }.sorted()

        // Idle: no application traffic; what the members send to keep the session alive.
        let idleStart = sentBytes.bytes
        try net.run(for: idlePhase)
        try collect()
        let idleSeconds = Double(idlePhase.components.seconds)
        let idleBytesPerMember = Double(sentBytes.bytes - idleStart) / Double(count) / idleSeconds

        // Churn: about one member in 16 crashes, one in 32 leaves, a partition splits the session for a while.
        let end = net.now + churnPhase
        var partitioned = false
        var nextAction = net.now + .milliseconds(500)
        while net.now < end {
            try net.run(for: .milliseconds(100))
            try collect()
            for (index, incarnation, at) in leaving where at <= net.now {
                guard state[index].alive, state[index].incarnation == incarnation else { continue }
                stop(index)
            }
            leaving.removeAll { $0.at <= net.now }
            try sendRound()
            guard net.now >= nextAction else { continue }
            nextAction = net.now + .milliseconds(Int64(random.integer(in: 300...1500)))
            let staying = (1..<count).filter { index in
                state[index].alive && state[index].joined && !leaving.contains { $0.index == index }
            }
            guard staying.count > 2 else { continue }
            switch random.integer(in: 0...5) {
            case 0...1:
                stop(staying[random.integer(in: 0...(staying.count - 1))])
            case 2:
                let leaver = staying[random.integer(in: 0...(staying.count - 1))]
                let now = net.now
                try net.withNode(leaver) { $0.depart(now: now) }
                leaving.append((leaver, state[leaver].incarnation, now + .seconds(3)))
            case 3:
                if !stopped.isEmpty {
                    let index = stopped.removeFirst()
                    if !state[index].alive { try join(index) }
                }
            case 4 where !partitioned:
                partitioned = true
                let half = (0..<count).filter { _ in random.chance(0.5) }
                net.partition([half, (0..<count).filter { !half.contains($0) }])
                net.schedule(at: net.now + .milliseconds(Int64(random.integer(in: 2000...8000)))) { net in
                    net.heal()
                    partitioned = false
                }
            default:
                break
            }
        }

        // Liveness: heal, everyone stopped rejoins, a little more traffic, then only time.
        net.heal()
        for (index, incarnation, _) in leaving where state[index].alive && state[index].incarnation == incarnation {
            stop(index)
        }
        for index in stopped where !state[index].alive { try join(index) }
        stopped.removeAll()
        let quietAt = net.now + .seconds(10)
        while net.now < quietAt {
            try net.run(for: .milliseconds(100))
            try collect()
            try sendRound()
        }
        let finalAt = net.now + livenessPhase
        while net.now < finalAt {
            try net.run(for: .seconds(1))
            try collect()
        }

        if let violation = ledger.violations.first {
            throw net.failure("\(ledger.violations.count) violation(s); first: \(violation)")
        }
        var alive: [Int: Int] = [:]
        for index in 0..<count where state[index].alive { alive[index] = state[index].incarnation }
        let (stuck, examples) = ledger.unresolved(alive: alive)
        guard stuck == 0 else {
            throw net.failure(
                "\(stuck) accepted message(s) neither delivered nor reported \(livenessPhase) after healing: "
                    + examples.joined(separator: "; "))
        }
        let survivors = alive.keys.filter { state[$0].joined }.sorted()
        let expected = survivors.map { session.staticKey($0) }.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        for index in survivors where net.node(index)!.activeKeys != expected {
            throw net.failure(
                "node \(index) sees \(net.node(index)!.activeKeys.count) active members, expected \(expected.count)")
        }
        for (position, a) in survivors.enumerated() {
            for b in survivors[(position + 1)...] where !connected(a, b) {
                throw net.failure("survivors \(a) and \(b) are not connected: the mesh is not full")
            }
        }
        var outcome = ScenarioOutcome(
            simulatedTime: net.now - .zero, messagesDelivered: ledger.delivered, bytesDelivered: 0)
        func milliseconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        }
        outcome.measurements = [
            ("join to full mesh p50 ms", milliseconds(joinTimes[joinTimes.count / 2])),
            ("join to full mesh p99 ms", milliseconds(joinTimes[min(joinTimes.count - 1, joinTimes.count * 99 / 100)])),
            ("join to full mesh max ms", milliseconds(joinTimes.last!)),
            ("idle bytes per member per second", idleBytesPerMember),
        ]
        return outcome
    }
}
