import HeapModule
import HuddleProtocol

/// A seeded, virtual-time network of ``SimulatedNode``s with a per-link fault model.
///
/// Time advances only from event to event, so minutes of a lossy network run in milliseconds, and everything random
/// comes from one seeded generator, so a seed replays a run bit for bit. Invariant checkers run after every event;
/// the first one that fails stops the run with a ``SimulationFailure`` that names the seed and every option.
public struct SimulatedNetwork<Node: SimulatedNode> {
    /// The run's seed.
    public let seed: UInt64
    /// The current virtual time.
    public private(set) var now = Instant.zero
    /// What happened to datagrams so far.
    public private(set) var statistics = NetworkStatistics()
    /// A running hash of every delivery (time, endpoints, bytes), to compare runs for determinism.
    public private(set) var traceHash: UInt64 = 0xcbf2_9ce4_8422_2325
    /// Options derived from the seed, printed on failure (scenarios append theirs).
    public var options: [String] = []
    /// The command that replays this run, printed on failure.
    public var replayCommand: String?
    /// The largest number of datagrams one node may emit in one step before the run is declared a livelock.
    public var maxTransmitsPerStep = 100_000
    /// How long each datagram that entered a shared bottleneck (``LinkConditions/sharedQueue``) waited in its queue.
    public private(set) var bottleneckDelays: [Duration] = []

    /// The random generator the network draws from; scenarios may draw from it too (in a fixed order).
    public var random: SimulationRandom
    /// How the network bends the schedule its nodes see (late timers, batched reads); ``explore(_:)`` sets it.
    public private(set) var schedule = SchedulePerturbation.none

    private var nodes: [Node?]
    private let addresses: [NetworkAddress]
    private let indexByAddress: [NetworkAddress: Int]
    private var defaultConditions: LinkConditions
    private var conditions: [LinkKey: LinkConditions] = [:]
    private var linkState: [LinkKey: LinkState] = [:]
    private var events = Heap<Event>()
    private var nextSequence: UInt64 = 0
    private var scheduledDeadline: [Instant?]
    /// The node deadline each scheduled timer stands for (with a perturbed schedule it fires later than that).
    private var timerDeadline: [Instant?]
    /// Datagrams waiting in each node's socket for the next read (with ``SchedulePerturbation/readDelay``).
    private var unread: [[(bytes: [UInt8], source: NetworkAddress)]]
    /// Whether a read of each node's socket is scheduled.
    private var readPending: [Bool]
    private var pausedUntil: [Instant?]
    /// Timer firings of each node at the current instant: a node whose deadline never moves past `now` is a livelock.
    private var firingsAtInstant: [(instant: Instant, count: Int)]
    /// How many times one node's timer may fire at the same instant before the run is declared a livelock.
    public var maxTimerFiringsPerInstant = 10_000
    private var actions: [Int: (inout SimulatedNetwork) -> Void] = [:]
    private var nextActionID = 0
    private var checkers: [(name: String, check: (SimulatedNetwork) -> String?)] = []
    /// NAT routers in front of nodes, by node index.
    public private(set) var nats: [Int: SimulatedNAT] = [:]
    /// When a datagram from one node to another (by index) was last lost or dropped on its way: checkers use it to
    /// tell an acknowledgement that may have been lost from one that cannot have been.
    private var lastDrops: [LinkKey: Instant] = [:]
    /// Called with every datagram a node sends, and the time it is sent.
    private var transmitObservers: [(Int, SimulatedTransmit, Instant) -> Void] = []

    /// A network of `nodes`, node `i` at `addresses[i]` (by default `127.0.0.(i + 1):4433`, ``address(of:)``),
    /// every link with `conditions`. Nodes may share an IP address on distinct ports, as members behind one NAT or
    /// on one machine do.
    public init(
        seed: UInt64, nodes: [Node], conditions: LinkConditions = .clean(), addresses: [NetworkAddress]? = nil
    ) {
        self.seed = seed
        self.random = SimulationRandom(seed: seed)
        self.nodes = nodes
        precondition(addresses.map { $0.count == nodes.count } ?? true, "one address per node")
        self.addresses = addresses ?? nodes.indices.map { Self.address(of: $0) }
        indexByAddress = Dictionary(uniqueKeysWithValues: self.addresses.enumerated().map { ($1, $0) })
        defaultConditions = conditions
        scheduledDeadline = Array(repeating: nil, count: nodes.count)
        timerDeadline = Array(repeating: nil, count: nodes.count)
        unread = Array(repeating: [], count: nodes.count)
        readPending = Array(repeating: false, count: nodes.count)
        pausedUntil = Array(repeating: nil, count: nodes.count)
        firingsAtInstant = Array(repeating: (Instant.zero, 0), count: nodes.count)
        options.append("links: \(conditions)")
        for index in nodes.indices { scheduleTimer(for: index) }
    }

    /// The address of node `index`.
    public static func address(of index: Int) -> NetworkAddress {
        NetworkAddress(
            ipv4: 127, 0, UInt8(truncatingIfNeeded: (index + 1) >> 8), UInt8(truncatingIfNeeded: index + 1), port: 4433)
    }

    /// The address of node `index`.
    public func address(of index: Int) -> NetworkAddress { addresses[index] }

    /// The number of nodes (crashed ones included).
    public var nodeCount: Int { nodes.count }

    /// Read access to node `index` (nil while crashed).
    public func node(_ index: Int) -> Node? { nodes[index] }

    /// Bends the schedule from now on as `schedule` says (see ``SchedulePerturbation``); printed with the options.
    public mutating func explore(_ schedule: SchedulePerturbation) {
        self.schedule = schedule
        options.append("schedule: \(schedule)")
        for index in nodes.indices { timerDeadline[index] = nil }
    }

    // MARK: - Driving nodes

    /// Runs `body` on node `index` (e.g. to call its API), then sends what it queued and re-arms its timer.
    @discardableResult
    public mutating func withNode<Result>(_ index: Int, _ body: (inout Node) throws -> Result) throws -> Result {
        // Taken out of its slot, not copied: with the slot still holding it, the body's first mutation of each
        // buffer (the endpoint's connection table, say) would copy it.
        guard var node = nodes[index].take() else {
            throw SimulationFailure(seed: seed, time: now, message: "node \(index) is crashed", options: options)
        }
        let result: Result
        do {
            result = try body(&node)
        } catch {
            // What the body did before it threw happened, as it would in a real node: keep it, send what it queued
            // and re-arm the timer.
            nodes[index] = consume node
            try flush(index)
            throw error
        }
        // Moved back, not copied: a copy left alive made the flush's first mutation copy every connection.
        nodes[index] = consume node
        try flush(index)
        return result
    }

    /// Processes every event up to and including `deadline`, then sets the clock to it.
    public mutating func run(until deadline: Instant) throws {
        while let event = events.min, event.time <= deadline {
            _ = events.removeMin()
            try process(event)
        }
        now = max(now, deadline)
    }

    /// Runs for `duration` of virtual time.
    public mutating func run(for duration: Duration) throws {
        try run(until: now + duration)
    }

    /// Runs until `condition` holds (checked after every event) or `timeout` of virtual time passes. Returns
    /// whether the condition held.
    public mutating func run(until condition: (SimulatedNetwork) -> Bool, timeout: Duration) throws -> Bool {
        let deadline = now + timeout
        if condition(self) { return true }
        while let event = events.min, event.time <= deadline {
            _ = events.removeMin()
            try process(event)
            if condition(self) { return true }
        }
        now = max(now, deadline)
        return condition(self)
    }

    /// Whether any event is pending.
    public var isIdle: Bool { events.isEmpty }

    // MARK: - NAT

    /// Puts node `index` behind `nat`: its own address becomes private (unreachable from the others), its datagrams
    /// leave from the NAT's public address, and only replies the NAT admits reach it.
    public mutating func placeBehindNAT(_ index: Int, _ nat: SimulatedNAT) {
        nats[index] = nat
        options.append("node \(index) behind a \(nat.mapping) NAT")
    }

    /// Makes the NAT in front of node `index` forget its mappings (a NAT rebinding).
    public mutating func rebindNAT(_ index: Int) {
        nats[index]?.rebind()
    }

    // MARK: - Faults

    /// Sets the conditions of the directed link `from` → `to`.
    public mutating func setConditions(_ link: LinkConditions, from: Int, to: Int) {
        conditions[LinkKey(from: from, to: to)] = link
    }

    /// Sets the conditions of both directions between `a` and `b`.
    public mutating func setConditions(_ link: LinkConditions, between a: Int, and b: Int) {
        setConditions(link, from: a, to: b)
        setConditions(link, from: b, to: a)
    }

    /// Sets the conditions of every link, replacing per-link settings.
    public mutating func setAllConditions(_ link: LinkConditions) {
        defaultConditions = link
        conditions.removeAll()
    }

    /// The conditions of the directed link `from` → `to`.
    public func conditions(from: Int, to: Int) -> LinkConditions {
        conditions[LinkKey(from: from, to: to)] ?? defaultConditions
    }

    /// Takes the directed link down or up (an asymmetric partition when only one direction changes).
    public mutating func setLink(from: Int, to: Int, up: Bool) {
        var link = conditions(from: from, to: to)
        link.isUp = up
        setConditions(link, from: from, to: to)
    }

    /// Splits the nodes into groups that cannot reach each other (symmetric); `heal()` undoes it.
    public mutating func partition(_ groups: [[Int]]) {
        for (groupIndex, group) in groups.enumerated() {
            for (otherIndex, other) in groups.enumerated() where otherIndex != groupIndex {
                for a in group { for b in other { setLink(from: a, to: b, up: false) } }
            }
        }
    }

    /// Brings every link up again, keeping the other per-link conditions.
    public mutating func heal() {
        for key in Array(conditions.keys) { conditions[key]?.isUp = true }
        defaultConditions.isUp = true
    }

    /// Freezes node `index` for `duration`: it processes nothing, and what arrives meanwhile waits for it (like a
    /// stopped process whose socket buffer keeps filling).
    public mutating func pause(_ index: Int, for duration: Duration) {
        pausedUntil[index] = now + duration
    }

    /// When node `index` resumes, while it is paused (``pause(_:for:)``); `nil` when it runs.
    public func resumption(of index: Int) -> Instant? {
        guard let resume = pausedUntil[index], resume > now else { return nil }
        return resume
    }

    /// Crashes node `index`: its memory is gone, datagrams to it are dropped, its timers never fire.
    public mutating func crash(_ index: Int) {
        nodes[index] = nil
        // A stopped process can be killed too; whatever restarts at its address runs.
        pausedUntil[index] = nil
        scheduledDeadline[index] = nil
        statistics.droppedUnroutable += unread[index].count
        unread[index].removeAll()
    }

    /// Restarts a crashed node with fresh state (`node`), at the same address.
    public mutating func restart(_ index: Int, with node: Node) throws {
        nodes[index] = node
        scheduledDeadline[index] = nil
        unread[index].removeAll()
        try flush(index)
    }

    /// Runs `action` at virtual time `time` (e.g. to start or end a fault, or to call a node's API).
    public mutating func schedule(at time: Instant, _ action: @escaping (inout SimulatedNetwork) -> Void) {
        let id = nextActionID
        nextActionID += 1
        actions[id] = action
        push(Event(time: max(time, now), sequence: sequence(), kind: .action(id)))
    }

    // MARK: - Invariants

    /// Adds a checker that runs after every event; returning a message fails the run.
    public mutating func addChecker(_ name: String, _ check: @escaping (SimulatedNetwork) -> String?) {
        checkers.append((name, check))
    }

    /// Delivers `datagram` to node `index` after `delay`, as if sent from `source` (an attacker's injection; no
    /// link faults apply).
    public mutating func inject(_ datagram: [UInt8], to index: Int, from source: NetworkAddress, after delay: Duration)
    {
        push(Event(time: now + delay, sequence: sequence(), kind: .deliver(index, source, datagram)))
    }

    /// Calls `observer` with every datagram any node sends (before faults apply), e.g. to keep a nonce ledger.
    public mutating func observeTransmits(_ observer: @escaping (Int, SimulatedTransmit) -> Void) {
        transmitObservers.append { index, transmit, _ in observer(index, transmit) }
    }

    /// Like ``observeTransmits(_:)``, with the simulated time each datagram is sent at (to measure gaps and rates).
    public mutating func observeTransmits(withTime observer: @escaping (Int, SimulatedTransmit, Instant) -> Void) {
        transmitObservers.append(observer)
    }

    /// When a datagram node `from` sent to node `to` was last lost or dropped on the way (loss, a link down, a full
    /// queue, a NAT, the MTU), or `nil` if none ever was.
    public func lastDrop(from: Int, to: Int) -> Instant? {
        lastDrops[LinkKey(from: from, to: to)]
    }

    /// A failure at the current time, for scenario code that detects a problem itself.
    public func failure(_ message: String) -> SimulationFailure {
        SimulationFailure(seed: seed, time: now, message: message, options: options, replayCommand: replayCommand)
    }

    // MARK: - Engine

    private mutating func process(_ event: Event) throws {
        now = max(now, event.time)
        switch event.kind {
        case .deliver(let index, let source, let datagram):
            if let resume = pausedUntil[index], resume > now, nodes[index] != nil {
                // It waits in the stopped process's socket buffer, which goes with the process if it crashes.
                statistics.delivered += 1
                statistics.deliveredBytes += datagram.count
                unread[index].append((datagram, source))
                if !readPending[index] {
                    readPending[index] = true
                    push(Event(time: resume, sequence: sequence(), kind: .read(index)))
                }
                return
            }
            guard nodes[index] != nil else {
                statistics.droppedUnroutable += 1
                return
            }
            statistics.delivered += 1
            statistics.deliveredBytes += datagram.count
            mixTrace(
                UInt64(bitPattern: now.nanoseconds), UInt64(index), UInt64(datagram.count),
                datagram.first.map(UInt64.init) ?? 0)
            if schedule.readDelay > .zero {
                // It waits in the socket until the loop's next read, with whatever else arrives by then.
                unread[index].append((datagram, source))
                if !readPending[index] {
                    readPending[index] = true
                    push(
                        Event(
                            time: now + random.duration(below: schedule.readDelay), sequence: sequence(),
                            kind: .read(index)))
                }
                return
            }
            nodes[index]!.handle(datagram: datagram, from: source, now: now)
            try flush(index)
        case .read(let index):
            readPending[index] = false
            guard nodes[index] != nil, !unread[index].isEmpty else { return }
            if let resume = pausedUntil[index], resume > now {
                readPending[index] = true
                push(Event(time: resume, sequence: sequence(), kind: .read(index)))
                return
            }
            let batch = unread[index]
            unread[index].removeAll(keepingCapacity: true)
            if schedule.mergesReads {
                nodes[index]!.handle(datagrams: batch, now: now)
            } else {
                for datagram in batch {
                    nodes[index]!.handle(datagram: datagram.bytes, from: datagram.source, now: now)
                }
            }
            try flush(index)
        case .timer(let index, let deadline):
            guard scheduledDeadline[index] == deadline, nodes[index] != nil else { return }
            if let resume = pausedUntil[index], resume > now {
                scheduledDeadline[index] = nil
                push(Event(time: resume, sequence: sequence(), kind: .timer(index, resume)))
                scheduledDeadline[index] = resume
                return
            }
            scheduledDeadline[index] = nil
            if firingsAtInstant[index].instant == now {
                firingsAtInstant[index].count += 1
                if firingsAtInstant[index].count > maxTimerFiringsPerInstant {
                    throw failure(
                        "node \(index)'s timer fired \(maxTimerFiringsPerInstant) times at \(now) (livelock): "
                            + nodes[index]!.diagnostics)
                }
            } else {
                firingsAtInstant[index] = (now, 1)
            }
            nodes[index]!.handleTimeout(now: now)
            try flush(index)
        case .action(let id):
            let action = actions.removeValue(forKey: id)
            action?(&self)
            for index in nodes.indices where nodes[index] != nil { try flush(index) }
        }
        for checker in checkers {
            if let message = checker.check(self) {
                throw failure("invariant '\(checker.name)' broken: \(message)")
            }
        }
    }

    /// Sends everything node `index` has queued and re-arms its timer.
    private mutating func flush(_ index: Int) throws {
        guard nodes[index] != nil else { return }
        if let resume = pausedUntil[index], resume > now {
            scheduleTimer(for: index)
            return
        }
        var emitted = 0
        while let transmit = nodes[index]!.pollTransmit(now: now) {
            emitted += 1
            if emitted > maxTransmitsPerStep {
                throw failure("node \(index) emitted more than \(maxTransmitsPerStep) datagrams in one step (livelock)")
            }
            route(transmit, from: index)
        }
        scheduleTimer(for: index)
    }

    private mutating func scheduleTimer(for index: Int) {
        // In place: `guard let node = nodes[index]` copied the whole node (every connection's buffers) per step.
        guard let deadline = nodes[index]?.nextDeadline else {
            scheduledDeadline[index] = nil
            return
        }
        let due: Instant
        if schedule.timerLateness == .zero && schedule.tick == nil {
            due = max(deadline, now)
        } else {
            // The same deadline keeps the firing time it drew: redrawing after every input would let a busy node's
            // timer slip for ever.
            if timerDeadline[index] == deadline, scheduledDeadline[index] != nil { return }
            timerDeadline[index] = deadline
            let lateness = schedule.timerLateness > .zero ? random.duration(below: schedule.timerLateness) : .zero
            due = max(schedule.firing(of: deadline, lateness: lateness), now)
        }
        guard scheduledDeadline[index] != due else { return }
        scheduledDeadline[index] = due
        push(Event(time: due, sequence: sequence(), kind: .timer(index, due)))
    }

    private mutating func route(_ transmit: SimulatedTransmit, from index: Int) {
        for observer in transmitObservers { observer(index, transmit, now) }
        statistics.sent += 1
        statistics.largestDatagram = max(statistics.largestDatagram, transmit.datagram.count)
        var source = addresses[index]
        if nats[index] != nil { source = nats[index]!.translate(to: transmit.destination) }
        let destination: Int
        if let direct = indexByAddress[transmit.destination], nats[direct] == nil {
            destination = direct
        } else if let (natted, nat) = nats.first(where: { $0.value.owns(transmit.destination) }) {
            guard nat.admits(from: source, toPort: transmit.destination.port) else {
                statistics.droppedByNAT += 1
                lastDrops[LinkKey(from: index, to: natted)] = now
                return
            }
            destination = natted
        } else {
            // No route, or a private address behind a NAT.
            statistics.droppedUnroutable += 1
            return
        }
        let key = LinkKey(from: index, to: destination)
        let link = conditions[key] ?? defaultConditions
        guard link.isUp else {
            statistics.droppedLinkDown += 1
            lastDrops[key] = now
            return
        }
        if let mtu = link.mtu, transmit.datagram.count > mtu {
            statistics.droppedOverMTU += 1
            lastDrops[key] = now
            return
        }
        // A shared bottleneck keeps its queue under one key for all its links.
        let stateKey = link.sharedQueue.map { LinkKey(from: -1 - $0, to: -1) } ?? key
        var state = linkState[stateKey] ?? LinkState()
        defer { linkState[stateKey] = state }
        if let burst = link.burstLoss {
            state.inBadState = state.inBadState ? !random.chance(burst.leaveBad) : random.chance(burst.enterBad)
            if random.chance(state.inBadState ? burst.lossInBad : link.lossRate) {
                statistics.lost += 1
                lastDrops[key] = now
                return
            }
        } else if random.chance(link.lossRate) {
            statistics.lost += 1
            lastDrops[key] = now
            return
        }
        var departure = now
        if let bandwidth = link.bandwidth, bandwidth > 0 {
            let start = max(state.busyUntil, now)
            let waitingBytes = Int(Double((start - now).nanoseconds) * Double(bandwidth) / 1e9)
            if waitingBytes + transmit.datagram.count > link.queueLimit {
                statistics.droppedQueueFull += 1
                lastDrops[key] = now
                return
            }
            if link.sharedQueue != nil { bottleneckDelays.append(start - now) }
            let serialization = Duration.nanoseconds(Int64(Double(transmit.datagram.count) * 1e9 / Double(bandwidth)))
            state.busyUntil = start + serialization
            departure = state.busyUntil
        }
        var datagram = transmit.datagram
        if random.chance(link.corruptRate) {
            corrupt(&datagram)
            statistics.corrupted += 1
            // Damaged is as good as lost: the receiver drops what fails authentication.
            lastDrops[key] = now
        }
        let arrival = departure + link.latency + random.duration(below: link.jitter)
        push(Event(time: arrival, sequence: sequence(), kind: .deliver(destination, source, datagram)))
        if random.chance(link.duplicateRate) {
            statistics.duplicated += 1
            let copyArrival = departure + link.latency + random.duration(below: link.jitter)
            push(Event(time: copyArrival, sequence: sequence(), kind: .deliver(destination, source, datagram)))
        }
    }

    /// Damages a datagram: a bit flip (most often), a truncation, or an extension with random bytes.
    private mutating func corrupt(_ datagram: inout [UInt8]) {
        let kind = random.integer(in: 0...9)
        if kind < 7 || datagram.count < 2 {
            guard !datagram.isEmpty else { return }
            let bit = random.integer(in: 0...(datagram.count * 8 - 1))
            datagram[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
        } else if kind < 9 {
            datagram.removeLast(random.integer(in: 1...min(16, datagram.count - 1)))
        } else {
            datagram += random.bytes(count: random.integer(in: 1...16))
        }
    }

    private mutating func push(_ event: Event) {
        events.insert(event)
    }

    private mutating func sequence() -> UInt64 {
        defer { nextSequence += 1 }
        return nextSequence
    }

    private mutating func mixTrace(_ values: UInt64...) {
        for value in values {
            traceHash ^= value
            traceHash = traceHash &* 0x100_0000_01b3
        }
    }
}

private struct LinkKey: Hashable {
    var from: Int
    var to: Int
}

private struct LinkState {
    var inBadState = false
    var busyUntil = Instant.zero
}

private struct Event: Comparable {
    enum Kind {
        case deliver(Int, NetworkAddress, [UInt8])
        case timer(Int, Instant)
        case read(Int)
        case action(Int)
    }

    var time: Instant
    var sequence: UInt64
    var kind: Kind

    static func < (lhs: Event, rhs: Event) -> Bool {
        (lhs.time, lhs.sequence) < (rhs.time, rhs.sequence)
    }

    static func == (lhs: Event, rhs: Event) -> Bool {
        lhs.time == rhs.time && lhs.sequence == rhs.sequence
    }
}
