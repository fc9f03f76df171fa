import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTransport
import HuddleWire
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Runs a node's session: drives its ``SessionMachine`` (membership and journal, the same type every simulator node
/// drives) on the transport's event loop, turns its events into the public API's state (``SessionContext``), and
/// routes members' messages to ``Messenger`` subscriptions.
///
/// The machine lives in a loop-bound box (``LoopSession``), together with the endpoint it drives: inside
/// ``UDPEndpointDriver/perform(_:)`` for local operations, in the event handler the engine installs with
/// ``UDPEndpointDriver/handleEvents(maxEvents:maxBytes:_:)``, which runs every batch of endpoint events through it
/// where they arrive and passes the output to the actor through an ``EventInbox``, and on the driver's one timer,
/// which runs every deadline the machine has (the join timeout, the departure wait and the wait for a subscriber
/// included: the engine keeps no clock of its own). No file I/O runs on the loop:
/// the journal's chunk writes, reads and resume scans go to a ``ChunkStoreWorker`` on NIO's blocking-I/O thread
/// pool, whose results come back through the cores like endpoint events; adding, loading and saving a whole
/// attachment run on that pool too.
///
/// The actor is the shell around the sans-IO ``SessionMachine`` (the SWIM "instance/shell" split): this file holds its
/// state and the session's life (begin, join, leave, end, teardown, timers); ``SessionEngine+Operations.swift`` the
/// application's requests, ``SessionEngine+Dispatch.swift`` the cores' output turned into API state, and
/// ``SessionEngine+Subscriptions.swift`` the routing of messages to ``Messenger`` subscriptions.
actor SessionEngine {
    /// The engine runs on the transport's event loop: dispatching the cores' output and calling into the endpoint
    /// (``UDPEndpointDriver/perform(_:)``) then take no thread switch, and a subscriber that prefers the loop
    /// (``HuddleNode/taskExecutor``) is resumed on the same thread. Nothing the actor does blocks: file work that
    /// grows with an attachment's size runs on NIO's thread pool.
    nonisolated var unownedExecutor: UnownedSerialExecutor {
        driver.eventLoop.executor.asUnownedSerialExecutor()
    }

    /// The session machine's waits (join timeout, departure wait, wait for a subscriber).
    static let timing = SessionTiming()
    /// Messages a subscription buffers before the engine stops reading (and the transport stops acknowledging).
    static let subscriptionCapacity = 1024
    /// Messages kept for subscriptions that do not exist yet (a late joiner's catch-up, or a flood sent right after
    /// joining, arrives before the app subscribes). When they fill up, the engine stops reading (the transport's flow
    /// control holds the senders back) for up to ``unclaimedGracePeriod`` for a subscription to take them; after
    /// that, what nobody subscribed to is dropped, counted and logged.
    static let maxUnclaimedMessages = 1024
    /// How long a full unclaimed buffer holds the session back before messages nobody subscribed to are dropped
    /// (``SessionTiming/subscriberWait``, a deadline of the machine): it is spent once until the next subscription,
    /// so a type nobody ever reads costs one pause, not one per message.
    static let unclaimedGracePeriod = timing.subscriberWait
    /// The channel messengers' interactive reliable messages and unreliable datagrams travel on.
    static let messengerChannel = ChannelID(16)
    /// The channel of messengers' bulk-priority reliable messages (``Messenger/Priority/bulk``): a bulk-class channel
    /// (128-255), which the transport schedules behind channel 16.
    static let messengerBulkChannel = ChannelID(201)
    /// The channel of messengers' duplicated interactive reliable messages (``Messenger/Redundancy/duplicate``): the
    /// node's connections send each small message on it twice (``ConnectionConfiguration/duplicatedChannels``).
    static let messengerDuplicatedChannel = ChannelID(17)

    /// Whether `channel` carries messenger messages.
    static func isMessengerChannel(_ channel: ChannelID) -> Bool {
        channel == messengerChannel || channel == messengerDuplicatedChannel || channel == messengerBulkChannel
    }
    /// Session events the event loop may have produced that the engine has not dispatched yet, before the event loop
    /// stops taking the endpoint's events (and the transport's flow control holds the peers back).
    static let maxPendingEvents = 512
    /// The same bound in message bytes.
    static let maxPendingBytes = 4 << 20
    /// The most endpoint events (and message bytes) the cores handle per event-loop call.
    static let eventBatchLimit = (events: 64, bytes: 1 << 20)

    let driver: UDPEndpointDriver
    let identity: Identity
    let name: String
    /// Where other members reach this node, best first.
    let advertisedAddresses: [NetworkAddress]
    /// The TURN servers this node's tickets carry (``HuddleNode/Configuration/shareTurnServers``).
    let sharedTurnServers: [TurnServer]
    /// Whether the node chose ``advertisedAddresses`` itself (the app set none): a relayed address a ticket's TURN
    /// server grants when joining then goes first in this member's record.
    let choosesAddresses: Bool
    /// Whether sessions relay for their other members and register with members as relays
    /// (``HuddleNode/Configuration/relaysForMembers``).
    let relaysForMembers: Bool
    /// Where the TURN allocations stand, updated on the event loop at each of the endpoint's `turnChanged` events
    /// (``HuddleNode/turnAllocationChanges()``).
    nonisolated let turnUpdates = Broadcast<[TurnAllocation]>([])
    /// Where the port mappings stand, updated on the event loop at each of the endpoint's `portMappingChanged`
    /// events and by the node's UPnP mappers (``HuddleNode/portMappingChanges()``).
    nonisolated let portMappings: PortMappingReport
    let logger: Logger
    /// The node's metrics, `nil` when no metrics backend is bootstrapped (nothing is counted for it then).
    nonisolated let metrics: NodeMetrics?
    /// Unreliable sends handed to the loop and not run yet (``Messenger`` sends them without waiting while few do).
    nonisolated let datagramGate = DatagramSendGate()
    /// Where sessions keep attachment chunks: one directory per session, deleted when the node leaves it.
    let dataRoot: URL
    /// The current session's machine; touched only on the event loop.
    let loop: NIOLoopBoundBox<LoopSession?>
    /// The cores' output for endpoint events, from the event loop to ``runEvents()``.
    let inbox = EventInbox(maxEvents: SessionEngine.maxPendingEvents, maxBytes: SessionEngine.maxPendingBytes)
    /// Counts installed sessions; outputs tagged with an earlier one are not dispatched.
    var generation = 0
    /// The session the node is in (or was in last).
    var context: SessionContext?
    var joinWaiters: [CheckedContinuation<Result<Void, HuddleError>, Never>] = []
    /// Set when the departure settled (or the session was torn down); ``depart(endingSession:)`` then waits no more.
    var departed = false
    /// Those waiting for the current departure to settle.
    var departureWaiters: [CheckedContinuation<Void, Never>] = []
    /// Set by a `.joined` event; the waiters are resumed at the end of the output that carried it.
    var joinCompleted = false
    /// Where received messenger messages go.
    var router = MessageRouter(unclaimedLimit: SessionEngine.maxUnclaimedMessages)
    /// Dispatches waiting for room in the router's unclaimed buffer (see ``unclaimedGracePeriod``), resumed by a
    /// subscription or when the grace period ends.
    var unclaimedWaiters: [CheckedContinuation<Void, Never>] = []
    /// The current session's participants by static key.
    var directory = ParticipantDirectory()
    var eventTask: Task<Void, Never>?

    init(
        driver: UDPEndpointDriver, identity: Identity, name: String, advertisedAddresses: [NetworkAddress],
        sharedTurnServers: [TurnServer] = [], choosesAddresses: Bool = false, relaysForMembers: Bool = true,
        portMappings: PortMappingReport = PortMappingReport(), dataRoot: URL, logger: Logger, metrics: NodeMetrics?
    ) {
        self.portMappings = portMappings
        self.relaysForMembers = relaysForMembers
        self.sharedTurnServers = sharedTurnServers
        self.choosesAddresses = choosesAddresses
        self.metrics = metrics
        self.driver = driver
        self.identity = identity
        self.name = name
        self.advertisedAddresses = advertisedAddresses
        self.dataRoot = dataRoot
        self.logger = logger
        loop = .makeEmptyBox(valueType: LoopSession.self, eventLoop: driver.eventLoop)
    }

    /// Starts handling the transport's events: on the event loop, each batch of endpoint events runs through the
    /// session cores at once (no round trip per event), and the output goes to ``inbox``; ``runEvents()`` dispatches
    /// it on the actor.
    func start() async {
        guard eventTask == nil else { return }
        let loop = self.loop
        let inbox = self.inbox
        let limit = Self.eventBatchLimit
        try? await driver.handleEvents(maxEvents: limit.events, maxBytes: limit.bytes) {
            [weak self, turnUpdates, portMappings] events, endpoint, now in
            // TURN and port-mapping state is the node's, session or not.
            if events.contains(where: { if case .turnChanged = $0 { true } else { false } }) {
                turnUpdates.update(TurnAllocation.all(of: endpoint))
            }
            if events.contains(where: { if case .portMappingChanged = $0 { true } else { false } }) {
                portMappings.endpointChanged(endpoint.portMappings)
            }
            // No session: events are dropped, as nothing could use them.
            guard loop.value != nil else { return true }
            for event in events { loop.value!.machine.handle(event, endpoint: &endpoint, now: now) }
            var output = loop.value!.drain()
            self?.signals(&output)
            let storeAdmits = loop.value!.storeWorker.admitsInput()
            // Both a slow app (the inbox) and a slow disk (the store worker's backlog) stop the input.
            guard !output.isEmpty else { return storeAdmits }
            return inbox.push(EventInbox.Batch(generation: loop.value!.generation, output: output)) && storeAdmits
        }
        // The preference matters where the task waits: a continuation resumed by the event loop (the inbox's) resumes
        // its task on the generic executor before the task hops back to the actor, and with the preference that is
        // the loop itself, not a wake-up of a cooperative-pool thread.
        eventTask = Task(executorPreference: driver.taskExecutor) { await self.runEvents() }
        await installTimers()
    }

    /// Dispatches the cores' outputs as the event loop produces them, batch after batch, until the engine shuts down.
    func runEvents() async {
        while let batches = await inbox.next() {
            for batch in batches where batch.generation == generation {
                await dispatch(batch.output)
            }
            if inbox.dispatched(batches) { driver.resumeEvents() }
        }
    }

    /// The local member record.
    var localRecord: MemberRecord {
        MemberRecord(identity: identity.publicIdentity, name: name, addresses: advertisedAddresses, epoch: 0)
    }

    /// The record to join `invitation` with: after the TURN servers the ticket shares are added and their allocations
    /// settle (as at start, at most ``HuddleNode/turnAllocationWait``), their relayed addresses go first when the
    /// node chose its addresses. A joiner whose network blocks UDP, or that sits behind a symmetric NAT, may be
    /// reachable only there: members that join after it dial its record, not the ticket.
    /// The TURN allocations once `servers` are among them and none may still change soon (see
    /// ``TurnAllocation/areUnsettled(_:)``), from the endpoint's `turnChanged` events, or as they stand after
    /// ``HuddleNode/turnAllocationWait``.
    func settledTurnAllocations(including servers: [TurnServer]) async -> [TurnAllocation] {
        let updates = turnUpdates
        let settled = await withTaskGroup(of: [TurnAllocation]?.self) { group in
            group.addTask {
                for await allocations in updates.stream() {
                    let present = servers.allSatisfy { server in
                        allocations.contains { $0.server == server.address && $0.transport == server.transport }
                    }
                    if present, !TurnAllocation.areUnsettled(allocations) { return allocations }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: HuddleNode.turnAllocationWait)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        return settled ?? updates.value
    }

    func recordWithTurn(from invitation: Invitation) async -> MemberRecord {
        let servers = invitation.turnServers
        guard !servers.isEmpty else { return localRecord }
        try? await driver.perform { endpoint, now in
            for server in servers { endpoint.addTurnServer(server, now: now) }
        }
        guard choosesAddresses else { return localRecord }
        let relayed = await settledTurnAllocations(including: servers).compactMap(\.relayedAddress)
        let addresses = relayed + advertisedAddresses.filter { !relayed.contains($0) }
        return MemberRecord(
            identity: identity.publicIdentity, name: name,
            addresses: Array(addresses.prefix(ProtocolLimits.maxMemberAddresses)), epoch: 0)
    }

    // MARK: - Session life

    /// Starts or joins the session `context` describes; returns once it is joined.
    func begin(_ context: SessionContext) async throws(HuddleError) {
        if let current = self.context, !current.isInvalidated { throw .alreadyInSession }
        self.context = context
        router.clearUnclaimed()
        departed = false
        context.journal.saw(context.local)
        switch context.plan {
        case .start(let membership):
            let activity = context.activity.value
            try await install(membership) { machine, endpoint, now in
                machine.update(&endpoint, now: now) { $0.setActivity(activity) }
            }
            context.state.update(.joined)
        case .join(let invitation):
            let started = ContinuousClock.now
            guard !invitation.isExpired() else { throw .invitationExpired(invitation.expiresAt) }
            let record = await recordWithTurn(from: invitation)
            let membership: SessionMembership
            do {
                membership = try SessionMembership(
                    joining: invitation.session, local: record, invitationSecret: invitation.secret,
                    members: invitation.members.map { (staticKey: $0.staticKey, addresses: $0.addresses) })
            } catch {
                throw .joinFailed(.invitationUnusable)
            }
            // The ticket's relays (and TURN servers, added above) carry the first handshake when the members named
            // cannot be reached directly.
            let relays = invitation.relays
            try await install(membership) { _, endpoint, now in
                for relay in relays { endpoint.addRelay(relay, now: now) }
            }
            // The machine's timers (on the driver's timer) ask again for a WELCOME that does not come, and give up
            // after the join timeout (a `.joinTimedOut` event).
            try await waitForJoin(context)
            metrics?.joined(after: ContinuousClock.now - started)
        }
    }

    func install(
        _ membership: SessionMembership,
        then body: @escaping @Sendable (inout SessionMachine<FileChunkStore>, inout Endpoint, Instant) -> Void
    ) async throws(HuddleError) {
        let directory = dataRoot.appending(path: membership.session.description)
        // Creating the directory is file I/O too: off the loop (a store error becomes a HuddleError there).
        let store = try await Journal.Attachment.runBlocking { () throws(StorageError) in
            try FileChunkStore(directory: directory)
        }
        context?.journal.store = store
        generation += 1
        let generation = self.generation
        let loop = self.loop
        let relaysForMembers = self.relaysForMembers
        let storeWorker = makeStoreWorker(store: store, generation: generation)
        // ``begin(_:)`` set the context before installing its machine.
        let deliveries = context?.deliveries ?? DeliveryLedger()
        let output: LoopSession.Output
        do {
            output = try await driver.perform { endpoint, now in
                // Invitations expire at wall-clock times; the machine reads no clock, so it is told where the driver's
                // clock stands against the wall clock.
                let wallClockAtZero = Date().timeIntervalSince1970 - Double(now.nanoseconds) / 1e9
                var session = LoopSession(
                    machine: SessionMachine(
                        local: endpoint.staticKey, store: store, defersStoreActions: true, timing: Self.timing,
                        wallClockAtZero: wallClockAtZero),
                    storeWorker: storeWorker, generation: generation, deliveries: deliveries)
                session.machine.relaysForMembers = relaysForMembers
                session.machine.start(membership, endpoint: &endpoint, now: now)
                body(&session.machine, &endpoint, now)
                let output = session.drain()
                loop.value = session
                return output
            }
        } catch {
            // `perform` refuses work only once the driver is closed (its body throws nothing).
            throw .transport(.driverClosed)
        }
        await dispatch(output)
    }

    /// The worker that applies session `generation`'s store actions off the event loop; its results go through the
    /// cores on the loop, and their output to ``inbox`` like that of endpoint events.
    func makeStoreWorker(store: FileChunkStore, generation: Int) -> ChunkStoreWorker {
        let loop = self.loop
        let inbox = self.inbox
        let driver = self.driver
        return ChunkStoreWorker(
            store: store,
            handBack: { [weak self] completions in
                driver.execute { [weak self] endpoint, now in
                    guard loop.value?.generation == generation else { return }
                    for completion in completions {
                        loop.value!.machine.complete(completion, endpoint: &endpoint, now: now)
                    }
                    var output = loop.value!.drain()
                    self?.signals(&output)
                    if !output.isEmpty { _ = inbox.push(EventInbox.Batch(generation: generation, output: output)) }
                }
            },
            resumeInput: { driver.resumeEvents() })
    }

    /// Returns once the machine reports `.joined`; throws when joining fails (the machine's `.joinTimedOut` after
    /// ``SessionTiming/joinTimeout`` among the reasons).
    func waitForJoin(_ context: SessionContext) async throws(HuddleError) {
        if case .joined = context.state.value { return }
        let outcome = await withCheckedContinuation { continuation in
            joinWaiters.append(continuation)
        }
        try outcome.get()
    }

    func failJoin(_ error: HuddleError) {
        let waiters = joinWaiters
        joinWaiters.removeAll()
        for waiter in waiters { waiter.resume(returning: .failure(error)) }
    }

    /// Announces departure, waits (briefly: ``SessionTiming/departureTimeout``) for it to be acknowledged, then closes
    /// every connection.
    func leave(_ context: SessionContext) async {
        // Another session's handle (or one whose session is over) has nothing to leave.
        guard context === self.context, !context.isInvalidated else { return }
        await depart(endingSession: false)
        reportUnconfirmed()
        failJoin(.invalidated(.left))
        context.invalidate(.left)
        await teardown(closing: true)
    }

    /// Ends the session for everyone.
    func end(_ context: SessionContext) async throws(HuddleError) {
        try context.requireJoined()
        await depart(endingSession: true)
        reportUnconfirmed()
        context.invalidate(.ended(by: nil))
        await teardown(closing: true)
    }

    /// Shuts the engine down (the node is closing).
    func shutdown() async {
        if let context, !context.isInvalidated {
            await leave(context)
            failJoin(.invalidated(.nodeShutDown))
            context.invalidate(.nodeShutDown)
        }
        eventTask?.cancel()
        inbox.finish()
        for subscription in router.removeAll() { subscription.queue.finish() }
        router.graceSpent = true
        releaseUnclaimedWaiters()
    }

    /// Reports every messenger message this node sent that a recipient has not confirmed as failed with
    /// ``DeliveryFailure/Reason/sessionEnded``: the session is over for this node before they were. The receipts'
    /// ledger knows them all (those on a connection and those still queued in front of it), and closes.
    func reportUnconfirmed() {
        guard let context else { return }
        let unconfirmed = context.deliveries.closeAll()
        for (participant, receipts) in unconfirmed.sorted(by: { $0.value[0] < $1.value[0] }) {
            metrics?.undelivered(count: receipts.count, reason: .sessionEnded)
            publish(
                DeliveryFailure(
                    participant: participant, count: receipts.count, receipts: receipts, reason: .sessionEnded),
                in: context)
        }
    }

    /// Announces the departure through the machine and waits until it reports the departure settled (its
    /// ``SessionEvent/departed(acknowledged:)``, dispatched like every event).
    func depart(endingSession: Bool) async {
        // What waits for a subscriber is of no use now: the dispatcher drops it instead of holding the session back,
        // so the departure event is not queued behind that wait.
        router.graceSpent = true
        releaseUnclaimedWaiters()
        let departing =
            (try? await performOnCore { machine, endpoint, now in
                machine.depart(endingSession: endingSession, endpoint: &endpoint, now: now)
                return true
            }) ?? false
        guard departing, !departed else { return }
        await withCheckedContinuation { departureWaiters.append($0) }
    }

    /// Takes the signals out of an output produced on the event loop (``LoopSession/Output/hasSignals``) and hands
    /// them to the actor, around the dispatcher; the rest goes through the inbox.
    nonisolated func signals(_ output: inout LoopSession.Output) {
        guard output.hasSignals else { return }
        var signals = LoopSession.Output()
        (signals.subscriberWaitOver, signals.departed) = (output.subscriberWaitOver, output.departed)
        (output.subscriberWaitOver, output.departed) = (false, false)
        Task { await self.receiveSignals(of: signals) }
    }

    /// Acts on an output's signals: the wait for a subscriber is over, the departure settled.
    func receiveSignals(of output: LoopSession.Output) {
        if output.subscriberWaitOver { unclaimedGraceEnded() }
        if output.departed { departureSettled() }
    }

    /// The machine reported the departure settled: resumes those waiting in ``depart(endingSession:)``.
    func departureSettled() {
        departed = true
        let waiters = departureWaiters
        departureWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Forgets the session: closes its connections (when asked), removes its peers and admissions, ends its
    /// subscriptions and deletes its attachments from this node.
    ///
    /// Everything that belongs to this session is taken before the first suspension: waiting for the store worker
    /// can take a while (a slow disk), and the application may begin a new session meanwhile (the context is already
    /// invalidated), whose context, subscriptions and directory must not be touched here.
    func teardown(closing: Bool) async {
        let context = self.context
        let store = context?.journal.store
        // The machine goes away with the session: nobody may wait for a departure it would have reported, or for the
        // outcome of a message (one still open failed with the session: ``reportUnconfirmed()`` told it when it ran).
        departureSettled()
        _ = context?.deliveries.closeAll()
        // This session's subscriptions end; those of a session not begun yet wait for it.
        let ended = router.removeAll(of: context)
        releaseUnclaimedWaiters()
        directory.removeAll()
        for subscription in ended { subscription.queue.finish() }
        if let context, store != nil {
            context.journal.finish()
            context.journal.store = nil
        }
        let loop = self.loop
        let storeWorker = try? await driver.perform { endpoint, now -> ChunkStoreWorker? in
            guard loop.value != nil else { return nil }
            defer { loop.value = nil }
            loop.value!.machine.finish(closingConnections: closing, endpoint: &endpoint, now: now)
            return loop.value!.storeWorker
        }
        // No write may land after the directory is removed below. Leaving a session deletes its attachments from
        // this node (the others keep theirs).
        await storeWorker?.close()
        if let store { _ = try? await Journal.Attachment.runBlocking { store.removeDirectory() } }
    }

    /// Runs the machine's timers (journal requests and HAVE batches, redials, join retries, invitation expiry, the
    /// join timeout, the departure wait and the wait for a subscriber) on the driver's one event-loop timer: an idle
    /// node wakes only when one of them is due, and their outputs go to ``inbox`` like those of endpoint events.
    func installTimers() async {
        let loop = self.loop
        let inbox = self.inbox
        let client = TimerClient(
            deadline: { _ in loop.value?.nextDeadline() },
            fire: { [weak self] endpoint, now in
                guard loop.value != nil else { return }
                loop.value!.machine.handleTimeout(endpoint: &endpoint, now: now)
                var output = loop.value!.drain()
                self?.signals(&output)
                if !output.isEmpty {
                    _ = inbox.push(EventInbox.Batch(generation: loop.value!.generation, output: output))
                }
            })
        try? await driver.setTimerClient(client)
    }

}
