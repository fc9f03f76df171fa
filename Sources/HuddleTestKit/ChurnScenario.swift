import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire

/// Membership churn in the simulator (issue 11, "the VOPR for membership"): 6 to 8 members join, leave, crash (memory
/// lost, identity kept), restart and rejoin, pairs of crashed members rejoin at the same instant (simultaneous open),
/// the network partitions (halves, one node isolated, one direction only) and heals, members change the shared
/// activity, and the creator removes members (each removal closes the open invitation, so it opens a new one; a
/// removed node never comes back), while every member sends reliable messages (8 bytes to 256 KiB) and unreliable
/// datagrams to every active member (and to random subsets) all along, right after joining too; the founder shares a
/// journal attachment at the start. A ``ChurnLedger`` checks every delivery and failure report as it happens, that
/// nobody sends to or delivers at a removed member after learning of its removal, and that nobody sends to a member
/// after learning that it left.
///
/// Every choice comes from the seed. After the churn phase everything heals, nobody crashes any more, and the run
/// continues for ``livenessPhase``: then every message a surviving sender accepted must have been delivered or
/// reported (no stall outlives that bound), every surviving member must see the same roster and the same activity,
/// and if any survivor holds the whole attachment, every survivor does, byte-identical.
public struct ChurnScenario {
    /// How long members churn.
    public var churnPhase: Duration = .seconds(60)
    /// How long the healed network runs before the final checks: longer than the 90 s handshake timeout, so a
    /// member that was never reached is declared unreachable by then.
    public var livenessPhase: Duration = .seconds(100)
    /// Whether each seed also bends the schedule (``SchedulePerturbation/explored(seed:)``): late and ticked timers,
    /// reads delayed and batched, the session's schedules set up at once. The `churn-schedule` variant.
    public var exploresSchedules = false

    public init() {}

    static let channel = ChannelID(16)
    static let datagramChannel = ChannelID(17)
    static let attachment = AttachmentID(bytes: [UInt8](repeating: 0xC4, count: 16))!

    /// The driver's view of one node.
    struct Member {
        var incarnation = 0
        /// Running (not crashed or stopped).
        var alive = false
        /// Joined (a WELCOME arrived, or the founder).
        var joined = false
        var counter: UInt32 = 0
        /// Removed by the creator: it stops and never rejoins.
        var removed = false
    }

    /// Runs one seed.
    public func run(seed: UInt64) throws -> ScenarioOutcome {
        var random = SimulationRandom(seed: seed ^ 0xC4_0C4)
        let count = random.integer(in: 6...8)
        let latency = Duration.milliseconds(Int64(random.integer(in: 1...20)))
        let lossRate = random.chance(0.5) ? Double(random.integer(in: 1...20)) / 1000 : 0
        var session = TestSession(count: count, seed: seed)
        let schedule = exploresSchedules ? SchedulePerturbation.explored(seed: seed) : .none
        var timing = SessionTiming()
        if schedule.schedulesAtOnce { timing.schedulingDelay = .zero }
        var net = SimulatedNetwork(
            seed: seed, nodes: session.nodes(timing: timing),
            conditions: LinkConditions(latency: latency, lossRate: lossRate))
        // Crashes, restarts and rekeys under churn must never send two packets under one (key, nonce) pair.
        Invariants.installNonceLedger(on: &net)
        var contentRandom = ChaChaRandomGenerator(seed: seed)
        let content = contentRandom.bytes(count: random.integer(in: 64 * 1024...1024 * 1024))
        net.options = [
            "members \(count)", "latency \(latency)", "loss \(lossRate)", "churn \(churnPhase)",
            "liveness \(livenessPhase)", "attachment \(content.count) bytes",
        ]
        // After the options are set: the drawn schedule is printed with them on failure.
        if exploresSchedules { net.explore(schedule) }
        var grant = session.invitation()
        var members = [Member](repeating: Member(), count: count)
        var ledger = ChurnLedger()
        // An acknowledgement leaves at most the maximum ACK delay after its message arrived and takes the link's
        // latency (links here have no jitter); a collect step (50 ms) may pass before a report is seen.
        ledger.acknowledgementWindow = latency + ProtocolLimits.maxAckDelay + .milliseconds(50)

        // The founder, then everyone joins through whoever is a member, 150 ms apart.
        let founding = session.founding(0, address: net.address(of: 0))
        let founderKey = session.identities[0].signingKey
        try net.withNode(0) { node in
            node.start(founding, now: .zero)
            node.update(now: .zero) { membership in
                membership.openInvitation(grant)
                membership.setActivity(Array("activity 0".utf8))
            }
            try node.share(content, id: Self.attachment, signingKey: founderKey, now: .zero)
        }
        var activities = 0
        members[0].alive = true
        members[0].joined = true
        let end = Instant.zero + churnPhase
        var nextAction = Instant.zero + .milliseconds(150)
        var joinQueue = Array(1..<count)
        var stopped: [Int] = []
        /// When a member last completed a join (see the liveness phase below).
        var lastJoinAt = Instant.zero
        var sends = 0
        var removals = 0

        func hints(_ net: SimulatedNetwork<MemberNode>) -> [(staticKey: X25519PublicKey, addresses: [NetworkAddress])] {
            for index in 0..<count where members[index].alive && members[index].joined {
                if let hints = net.node(index)?.core?.membership.ticketHints(limit: 8), !hints.isEmpty { return hints }
            }
            return []
        }

        func join(_ index: Int, _ net: inout SimulatedNetwork<MemberNode>) throws {
            let known = hints(net)
            guard !known.isEmpty else { return }
            members[index].incarnation += 1
            members[index].alive = true
            members[index].joined = false
            members[index].counter = 0
            let endpoint = session.endpoint(index, incarnation: UInt64(members[index].incarnation))
            try net.restart(index, with: MemberNode(endpoint: endpoint, timing: timing))
            let membership = session.joining(index, address: net.address(of: index), grant: grant, hints: known)
            let now = net.now
            try net.withNode(index) { $0.start(membership, now: now) }
        }

        /// Members that announced their departure and stop at the given time (after their events are collected): when
        /// their machine reports the departure settled, as the engine does, or at the latest a little after its wait.
        var leaving: [(index: Int, incarnation: Int, at: Instant)] = []

        /// A member frozen like a process stopped with SIGSTOP (or starved of CPU) for longer than the idle timeout:
        /// it processes nothing, the others time it out, and its application's input piles up. It resumes at `until`
        /// and sends `burst` messages at once: in the step before it resumes when `burstFirst` (they wait in its
        /// endpoint and go out before it sees its timers and the datagrams that arrived meanwhile), else in the step
        /// after (it has caught up by then).
        var frozen: (index: Int, until: Instant, burst: Int, burstFirst: Bool)?

        /// Stops node `index` (a crash: its memory is gone) and tells the ledger.
        func stop(_ index: Int, _ net: inout SimulatedNetwork<MemberNode>) {
            if frozen?.index == index { frozen = nil }
            ledger.stopped(node: index, incarnation: members[index].incarnation, time: net.now)
            net.crash(index)
            members[index].alive = false
            if !members[index].removed { stopped.append(index) }
        }

        /// Takes every node's new events into the ledger.
        func collect(_ net: inout SimulatedNetwork<MemberNode>) throws {
            for index in 0..<count where members[index].alive {
                let incarnation = members[index].incarnation
                let events = try net.withNode(index) { $0.takeEvents() }
                for (time, event) in events {
                    ledger.record(
                        event, node: index, incarnation: incarnation, time: time, channel: Self.channel,
                        datagramChannel: Self.datagramChannel)
                    switch event {
                    case .joined:
                        members[index].joined = true
                        lastJoinAt = max(lastJoinAt, time)
                    case .joinFailed, .joinTimedOut:
                        // Not a violation by itself (every member named in its ticket may be gone); it tries again.
                        stop(index, &net)
                    case .removed:
                        // As the engine does: close every connection and stop, for good.
                        ledger.removed(node: index, incarnation: incarnation, time: time)
                        members[index].removed = true
                        let now = net.now
                        try net.withNode(index) { $0.finish(now: now) }
                        stop(index, &net)
                    case .participantLeft(let record, .removed):
                        if let victim = (0..<count).first(where: { session.staticKey($0) == record.staticKey }) {
                            ledger.learnedRemoval(observer: index, incarnation: incarnation, of: victim, time: time)
                        }
                    case .participantJoined(let record):
                        // Back (joined again): whatever incarnation the driver's view says, it is a member again.
                        if let member = (0..<count).first(where: { session.staticKey($0) == record.staticKey }) {
                            ledger.learnedReturn(observer: index, incarnation: incarnation, of: member)
                        }
                    case .participantLeft(let record, .left):
                        if let leaver = (0..<count).first(where: { session.staticKey($0) == record.staticKey }) {
                            ledger.learnedDeparture(
                                observer: index, incarnation: incarnation, of: leaver,
                                nodeIncarnation: members[leaver].incarnation, time: time)
                        }
                    case .departed:
                        // The engine's teardown: close every connection (the peers learn at once), then stop.
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

        /// One round of sends: every joined member sends one message to every active member (or a random subset).
        /// A frozen member sends nothing until its burst.
        func sendRound(_ net: inout SimulatedNetwork<MemberNode>, random: inout SimulationRandom) throws {
            var rounds = [Int](repeating: 1, count: count)
            if let freeze = frozen {
                let resumesThisStep = freeze.until - net.now < .milliseconds(50)
                if freeze.burstFirst ? resumesThisStep : net.now >= freeze.until {
                    rounds[freeze.index] = freeze.burst
                    frozen = nil
                } else {
                    rounds[freeze.index] = 0
                }
            }
            for index in 0..<count where members[index].alive && members[index].joined {
                for _ in 0..<rounds[index] { try sendOne(from: index, &net, random: &random, small: rounds[index] > 1) }
            }
        }

        /// Node `index` sends one message to every member it sees active (or a random subset), and sometimes a
        /// datagram; `small` keeps the message under 300 bytes (a burst of typed lines).
        func sendOne(
            from index: Int, _ net: inout SimulatedNetwork<MemberNode>, random: inout SimulationRandom, small: Bool
        ) throws {
            guard let node = net.node(index), let core = node.core, core.membership.phase == .member else {
                return
            }
            var recipients = core.membership.activeMembers.dropFirst().map(\.staticKey)
            if random.chance(0.2) { recipients = recipients.filter { _ in random.chance(0.5) } }
            let size =
                small || random.chance(0.9)
                ? random.integer(in: 8...300)
                : random.chance(0.9)
                    ? random.integer(in: 300...20_000)
                    : random.integer(in: 20_000...WireLimits.maxMessageSize)
            let counter = members[index].counter
            members[index].counter += 1
            let bytes = ChurnLedger.payload(
                sender: index, incarnation: members[index].incarnation, counter: counter, size: size)
            for key in recipients {
                guard let recipient = (0..<count).first(where: { session.staticKey($0) == key }) else { continue }
                let recipientIncarnation = members[recipient].alive ? members[recipient].incarnation : nil
                let result = try net.withNode(index) { $0.sendRecorded(bytes, on: Self.channel, to: key) }
                guard let (connection, sequence) = result else { continue }
                ledger.sent(
                    sender: index, senderIncarnation: members[index].incarnation, counter: counter,
                    recipient: recipient, recipientIncarnation: recipientIncarnation, connection: connection,
                    sequence: sequence, time: net.now)
                sends += 1
            }
            // Unreliable: at most once, never altered, never from anyone who did not send it.
            guard random.chance(0.3) else { return }
            let datagram = ChurnLedger.payload(
                sender: index, incarnation: members[index].incarnation, counter: counter,
                size: random.integer(in: 8...1000), tag: ChurnLedger.datagramTag)
            for key in recipients {
                guard let recipient = (0..<count).first(where: { session.staticKey($0) == key }) else { continue }
                let sent = try net.withNode(index) { $0.sendDatagram(datagram, on: Self.datagramChannel, to: key) }
                if sent {
                    ledger.sentDatagram(
                        sender: index, senderIncarnation: members[index].incarnation, counter: counter,
                        recipient: recipient)
                }
            }
        }

        // The churn phase, in 50 ms steps: sends every step, a fault or membership change every 0.3-2 s.
        var partitioned = false
        while net.now < end {
            try net.run(for: .milliseconds(50))
            try collect(&net)
            for (index, incarnation, at) in leaving where at <= net.now {
                guard members[index].alive, members[index].incarnation == incarnation else { continue }
                stop(index, &net)
            }
            leaving.removeAll { $0.at <= net.now }
            try sendRound(&net, random: &random)
            guard net.now >= nextAction else { continue }
            nextAction = net.now + .milliseconds(Int64(random.integer(in: 300...2000)))
            if let next = joinQueue.first {
                joinQueue.removeFirst()
                try join(next, &net)
                continue
            }
            let live = (0..<count).filter { members[$0].alive }
            // Members that stay: joined, not on their way out. Crashes and departures keep at least two of them, so
            // the session never dies out (a ticket needs a member to name) and stopped members can always rejoin.
            let staying = live.filter { index in
                members[index].joined && !leaving.contains { $0.index == index } && frozen?.index != index
            }
            switch random.integer(in: 0...10) {
            case 0...1 where live.count > 2 && staying.count > 2:
                // Crash a member (memory lost); it restarts and rejoins a little later.
                let victim = live[random.integer(in: 0...(live.count - 1))]
                stop(victim, &net)
            case 2 where staying.count > 2:
                // A member leaves as the engine does: announces it, waits for the acknowledgements (at most the
                // machine's departure wait), closes its connections and stops.
                let leaver = staying[random.integer(in: 0...(staying.count - 1))]
                let now = net.now
                try net.withNode(leaver) { $0.depart(now: now) }
                leaving.append((leaver, members[leaver].incarnation, now + .seconds(3)))
            case 3...4:
                if let index = stopped.first {
                    stopped.removeFirst()
                    if !members[index].alive { try join(index, &net) }
                }
            case 5 where !partitioned:
                partitioned = true
                let isolated = random.integer(in: 0...(count - 1))
                if random.chance(0.5) {
                    net.partition([[isolated], (0..<count).filter { $0 != isolated }])
                } else {
                    let half = (0..<count).filter { _ in random.chance(0.5) }
                    net.partition([half, (0..<count).filter { !half.contains($0) }])
                }
                net.schedule(at: net.now + .milliseconds(Int64(random.integer(in: 1000...15_000)))) { net in
                    net.heal()
                    partitioned = false
                }
            case 6 where !partitioned:
                // One direction only (TEST-MATRIX N12).
                partitioned = true
                let a = random.integer(in: 0...(count - 1))
                let b = (a + random.integer(in: 1...(count - 1))) % count
                net.setLink(from: a, to: b, up: false)
                net.schedule(at: net.now + .milliseconds(Int64(random.integer(in: 1000...15_000)))) { net in
                    net.heal()
                    partitioned = false
                }
            case 7 where stopped.count >= 2:
                // Two crashed members rejoin at the same instant: each learns of the other from the roster at about
                // the same time and both dial (simultaneous open, §7.6).
                let pair = Array(stopped.prefix(2))
                stopped.removeFirst(2)
                for index in pair where !members[index].alive { try join(index, &net) }
            case 8:
                // A member changes the shared activity (last writer wins: everyone converges on one value).
                let authors = live.filter { members[$0].joined }
                guard !authors.isEmpty else { break }
                let author = authors[random.integer(in: 0...(authors.count - 1))]
                activities += 1
                let payload = Array("activity \(activities)".utf8)
                let now = net.now
                try net.withNode(author) { $0.update(now: now) { $0.setActivity(payload) } }
            case 9 where frozen == nil && staying.count > 2:
                // A member stops like a process under SIGSTOP (or one starved of CPU) for 31-50 s, past the others'
                // idle timeout, and resumes before the churn ends, its input piled up. In the soak this lost a block
                // of the frozen member's lines at one receiver without a report (issue 34).
                let victim = staying[random.integer(in: 0...(staying.count - 1))]
                let steps = random.integer(in: 620...1000)
                let offset = Duration.milliseconds(random.chance(0.5) ? 0 : Int64(random.integer(in: 1...49)))
                let duration = Duration.milliseconds(Int64(steps) * 50) + offset
                guard net.now + duration < end else { break }
                net.pause(victim, for: duration)
                ledger.paused(node: victim, from: net.now, until: net.now + duration)
                frozen = (victim, net.now + duration, random.integer(in: 20...300), random.chance(0.5))
            case 10
            where removals < 2 && staying.contains(0) && staying.count > 3:
                // The creator removes a member; the removal closes the open invitation, so it opens another for those
                // still to (re)join. The removed node stops when it learns of it and never comes back.
                let victim = staying.filter { $0 != 0 }[random.integer(in: 0...(staying.count - 2))]
                removals += 1
                // Removed from now on, whether or not it hears of it (cut off by a partition or frozen, it may not:
                // nobody answers it any more, and it is not counted among the survivors).
                members[victim].removed = true
                let removal = session.removal(of: victim)
                grant = session.invitation()
                let (now, next) = (net.now, grant)
                try net.withNode(0) { node in
                    node.update(now: now) { membership in
                        membership.remove(removal)
                        membership.openInvitation(next)
                    }
                }
            default:
                break
            }
        }
        // Liveness: heal, let every stopped node (and every one still leaving) rejoin, keep sending for a while, then
        // only run.
        net.heal()
        for (index, incarnation, _) in leaving where members[index].alive && members[index].incarnation == incarnation {
            stop(index, &net)
        }
        for index in stopped where !members[index].alive { try join(index, &net) }
        stopped.removeAll()
        let quietAt = net.now + .seconds(10)
        while net.now < quietAt {
            try net.run(for: .milliseconds(50))
            try collect(&net)
            try sendRound(&net, random: &random)
        }
        // The bound runs from the later of the heal and the last join. A member that rejoins late (the one member its
        // ticket named was still finding its way back into the mesh after a freeze) dials every member its WELCOME
        // names; one of those may have been announced but never come up (its sponsor left mid-join), and a handshake
        // gives up only at the 90 s handshake timeout from that dial (churn-schedule seed 148: a join at 88.8 s, so
        // that view settles at 178.9 s, past a bound counted from the heal).
        let healedAt = net.now
        while net.now < max(healedAt, lastJoinAt) + livenessPhase {
            try net.run(for: .seconds(1))
            try collect(&net)
        }

        if let violation = ledger.violations.first {
            throw net.failure("\(ledger.violations.count) violation(s); first: \(violation)")
        }
        /// Node `index`'s connections as `peer:id:state`, for failure messages.
        func connections(_ index: Int) -> String {
            guard let node = net.node(index) else { return "down" }
            return node.endpoint.connectionIDs.map { id -> String in
                let connection = node.endpoint.connection(id)!
                let peer = (0..<count).first { session.staticKey($0) == connection.peer } ?? -1
                return "\(peer):\(id):\(connection.state)"
                    + (connection.bytesInFlight > 0 ? " inflight \(connection.bytesInFlight)" : "")
            }.joined(separator: ",")
        }
        var alive: [Int: Int] = [:]
        for index in 0..<count where members[index].alive { alive[index] = members[index].incarnation }
        let (stuck, examples) = ledger.unresolved(alive: alive)
        guard stuck == 0 else {
            let dropped = (0..<count).map { index -> String in
                guard let node = net.node(index), let core = node.core else { return "\(index): down" }
                let views = (0..<count).map { other -> String in
                    let key = session.staticKey(other)
                    let m = core.membership
                    return "\(other)=\(m.member(key)?.epoch ?? 0)\(m.isActiveParticipant(key) ? "a" : "")"
                        + "\(m.isActiveMember(key) ? "c" : "")"
                }
                return
                    "\(index): epoch \(core.membership.local.epoch) views \(views) dropped \(core.nonMemberMessagesDropped), held \(core.earlyMessagesHeld), "
                    + "active \(core.membership.activeMembers.count), phase \(core.membership.phase), \(connections(index))"
            }
            throw net.failure(
                "\(stuck) accepted message(s) neither delivered nor reported \(livenessPhase) after healing: "
                    + examples.joined(separator: "; ") + " [" + dropped.joined(separator: "; ") + "]")
        }
        // A removed member is gone for the survivors that know of its removal. When every member that learned of it
        // is gone too (the victim was cut off then, and those who knew crashed or left), the removal went with them:
        // the victim is a member again for whoever is left, as for any member.
        let candidates = alive.keys.filter { members[$0].joined }
        let removalKnown = { (victim: Int) in
            candidates.contains { index in
                index != victim
                    && net.node(index)!.core!.membership.knowsRemoval(
                        of: session.identities[victim].signingKey.publicKey)
            }
        }
        let joined = candidates.filter { !members[$0].removed || !removalKnown($0) }.sorted()
        guard !joined.isEmpty else { throw net.failure("no member survived: the scenario let the session die out") }
        let expected = joined.map { session.staticKey($0) }.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        for index in joined where net.node(index)!.activeKeys != expected {
            let views = joined.map { other -> String in
                let m = net.node(other)!.core!.membership
                return "\(other) \(m.phase): "
                    + joined.map {
                        "\($0)=\(m.member(session.staticKey($0))?.epoch ?? 0)"
                            + (m.isActiveParticipant(session.staticKey($0)) ? "a" : "")
                    }.joined(separator: ",")
            }
            throw net.failure(
                "node \(index) sees \(net.node(index)!.activeKeys.count) active members ("
                    + net.node(index)!.activeKeys.compactMap { key in
                        session.identities.indices.first { session.staticKey($0) == key }.map {
                            "\($0)\(alive[$0] == nil ? " (not running)" : "")\(members[$0].removed ? " (removed)" : "")"
                        }
                    }.joined(separator: ", ") + "), expected \(expected.count) ["
                    + views.joined(separator: "; ") + "] connections ["
                    + joined.map { "\($0): " + connections($0) }.joined(separator: "; ") + "]")
        }
        let seenActivities = Set(joined.map { net.node($0)!.activityPayload ?? [] })
        guard seenActivities.count <= 1 else {
            let seen = joined.map { "\($0): \(String(decoding: net.node($0)!.activityPayload ?? [], as: UTF8.self))" }
            throw net.failure("survivors see different activities: \(seen.joined(separator: ", "))")
        }
        let holders = joined.filter { net.node($0)!.journal.state.isComplete(Self.attachment) }
        for index in holders where net.node(index)!.journal.store.assemble(Self.attachment) != content {
            throw net.failure("node \(index) holds the attachment altered")
        }
        if !holders.isEmpty, holders.count != joined.count {
            let missing = joined.filter { !holders.contains($0) }.map { index -> String in
                let state = net.node(index)!.journal.state
                return "\(index) (\(state.verifiedBytes(Self.attachment)) bytes verified, manifest "
                    + "\(state.manifest(Self.attachment) != nil ? "known" : "unknown"))"
            }
            throw net.failure(
                "the attachment is complete on \(holders) but not on \(missing.joined(separator: ", "))")
        }
        // One admission key everywhere: every removal moved it, and concurrent moves converge.
        let admissions = joined.map { index -> String in
            let membership = net.node(index)!.core!.membership
            return
                "\(index): epoch \(membership.admissionEpoch) id \(membership.sessionAdmission.map { "\($0)" } ?? "none")"
        }
        guard Set(admissions.map { $0.drop { $0 != ":" } }).count == 1 else {
            throw net.failure("survivors hold different admission keys: \(admissions.joined(separator: ", "))")
        }
        // Every removal that happened reached the members that stayed (each reports the removed one gone as removed).
        if removals > 0, ledger.removalsObserved == 0 {
            throw net.failure("\(removals) removal(s) made, but no member reported a participant removed")
        }
        if let failure = ledger.datagramViolations.first {
            throw net.failure("\(ledger.datagramViolations.count) datagram violation(s); first: \(failure)")
        }
        return ScenarioOutcome(
            simulatedTime: net.now - .zero, messagesDelivered: ledger.delivered, bytesDelivered: 0)
    }
}
