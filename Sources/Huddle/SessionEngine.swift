import DequeModule
import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTransport
import HuddleWire
import Logging
import NIOConcurrencyHelpers

/// Runs a node's session: drives the ``SessionCores`` (membership and journal) on the transport's event loop, turns
/// their events into the public API's state (``SessionContext``), and routes members' messages to ``Messenger``
/// subscriptions.
///
/// The cores live in a lock-protected box that is only touched on the event loop, together with the endpoint they
/// drive: inside ``UDPEndpointDriver/perform(_:)`` for local operations, and in the event handler the engine installs
/// with ``UDPEndpointDriver/handleEvents(maxEvents:maxBytes:_:)``, which runs every batch of endpoint events through
/// them where they arrive and passes the output to the actor through an ``EventInbox``. No file I/O runs on the loop:
/// the journal's chunk writes, reads and resume scans go to a ``ChunkStoreWorker`` on NIO's blocking-I/O thread
/// pool, whose results come back through the cores like endpoint events; adding, loading and saving a whole
/// attachment run on that pool too.
///
/// The actor is the shell around the sans-IO ``SessionCores`` (the SWIM "instance/shell" split): this file holds its
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

    /// How long joining waits for a WELCOME.
    static let joinTimeout: Duration = .seconds(30)
    /// How long leaving waits for the departure announcement to be acknowledged before closing connections.
    static let leaveFlushTimeout: Duration = .seconds(2)
    /// Messages a subscription buffers before the engine stops reading (and the transport stops acknowledging).
    static let subscriptionCapacity = 1024
    /// Messages kept for subscriptions that do not exist yet (a late joiner's catch-up, or a flood sent right after
    /// joining, arrives before the app subscribes). When they fill up, the engine stops reading (the transport's flow
    /// control holds the senders back) for up to ``unclaimedGracePeriod`` for a subscription to take them; after
    /// that, what nobody subscribed to is dropped, counted and logged.
    static let maxUnclaimedMessages = 1024
    /// How long a full unclaimed buffer holds the session back before messages nobody subscribed to are dropped: long
    /// enough for an app that starts reading right after joining, even on a loaded machine; it is spent once until
    /// the next subscription, so a type nobody ever reads costs one pause, not one per message.
    static let unclaimedGracePeriod: Duration = .seconds(3)
    /// The channel messengers' reliable messages and unreliable datagrams travel on.
    static let messengerChannel = ChannelID(16)
    /// Session events the event loop may have produced that the engine has not dispatched yet, before the event loop
    /// stops taking the endpoint's events (and the transport's flow control holds the peers back).
    static let maxPendingEvents = 512
    /// The same bound in message bytes.
    static let maxPendingBytes = 4 << 20
    /// The most endpoint events (and message bytes) the cores handle per event-loop call.
    static let eventBatchLimit = (events: 64, bytes: 1 << 20)

    struct Subscription {
        var reliable: Bool
        var kind: MessageEnvelope.Kind
        var typeName: String
        var queue: BoundedAsyncQueue<ReceivedMessage>

        func matches(_ message: ReceivedMessage) -> Bool {
            message.reliable == reliable && message.envelope.kind == kind && message.envelope.typeName == typeName
        }
    }

    let driver: UDPEndpointDriver
    let identity: Identity
    let name: String
    /// Where other members reach this node, best first.
    let advertisedAddresses: [NetworkAddress]
    let logger: Logger
    /// The node's metrics, `nil` when no metrics backend is bootstrapped (nothing is counted for it then).
    nonisolated let metrics: NodeMetrics?
    /// Where sessions keep attachment chunks: one directory per session, deleted when the node leaves it.
    let dataRoot: URL
    let core = NIOLockedValueBox<SessionCores?>(nil)
    /// The cores' output for endpoint events, from the event loop to ``runEvents()``.
    let inbox = EventInbox(maxEvents: SessionEngine.maxPendingEvents, maxBytes: SessionEngine.maxPendingBytes)
    /// Counts installed sessions; outputs tagged with an earlier one are not dispatched.
    var generation = 0
    var context: SessionContext? {
        didSet { sendingContext.withLockedValue { $0 = context } }
    }
    /// ``context`` for ``send(_:reliable:to:)``, which runs off the actor.
    let sendingContext = NIOLockedValueBox<SessionContext?>(nil)
    var joinWaiters: [CheckedContinuation<Void, any Error>] = []
    /// Set by a `.joined` event; the waiters are resumed at the end of the output that carried it.
    var joinCompleted = false
    var subscriptions: [Int: Subscription] = [:]
    var nextSubscription = 0
    var unclaimed = Deque<ReceivedMessage>()
    /// Dispatches waiting for room in ``unclaimed`` (see ``unclaimedGracePeriod``), resumed by a subscription or
    /// when the grace period ends.
    var unclaimedWaiters: [CheckedContinuation<Void, Never>] = []
    /// The grace period was spent without a subscription taking the unclaimed messages: drop at once until the next
    /// subscription.
    var unclaimedGraceSpent = false
    /// Participants by static key, so routing a message does not compute the sender's fingerprint each time.
    var participantCache: [X25519PublicKey: Participant] = [:]
    var eventTask: Task<Void, Never>?
    /// Messages dropped because nobody subscribed to their type and the unclaimed buffer was full.
    var unclaimedDropped = 0
    /// Messages that were not valid messenger envelopes.
    var undecodableDropped = 0
    /// Drops not yet reported on ``GroupSession/messageDrops``: reported at the end of the batch that made them, one
    /// report per run of drops of one kind.
    var pendingDrops: [MessageDrop] = []

    init(
        driver: UDPEndpointDriver, identity: Identity, name: String, advertisedAddresses: [NetworkAddress],
        dataRoot: URL, logger: Logger, metrics: NodeMetrics?
    ) {
        self.metrics = metrics
        self.driver = driver
        self.identity = identity
        self.name = name
        self.advertisedAddresses = advertisedAddresses
        self.dataRoot = dataRoot
        self.logger = logger
    }

    /// Starts handling the transport's events: on the event loop, each batch of endpoint events runs through the
    /// session cores at once (no round trip per event), and the output goes to ``inbox``; ``runEvents()`` dispatches
    /// it on the actor.
    func start() async {
        guard eventTask == nil else { return }
        let core = self.core
        let inbox = self.inbox
        let limit = Self.eventBatchLimit
        try? await driver.handleEvents(maxEvents: limit.events, maxBytes: limit.bytes) { events, endpoint, now in
            let (batch, storeAdmits) = core.withLockedValue { box -> (EventInbox.Batch?, Bool) in
                // No session: events are dropped, as nothing could use them.
                guard box != nil else { return (nil, true) }
                for event in events { box!.handle(event, endpoint: &endpoint, now: now) }
                let output = box!.drain(endpoint: &endpoint, now: now)
                return (EventInbox.Batch(generation: box!.generation, output: output), box!.storeWorker.admitsInput())
            }
            // Both a slow app (the inbox) and a slow disk (the store worker's backlog) stop the input.
            guard let batch, !batch.output.isEmpty else { return storeAdmits }
            return inbox.push(batch) && storeAdmits
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

    // MARK: - Session life

    /// Starts or joins the session `context` describes; returns once it is joined.
    func begin(_ context: SessionContext) async throws {
        if let current = self.context, !current.isInvalidated { throw HuddleError.alreadyInSession }
        self.context = context
        unclaimed.removeAll()
        context.journal.saw(context.local)
        switch context.plan {
        case .start(let membership):
            let activity = context.activity.value
            try await install(membership) { cores, endpoint, now in
                cores.session.update(&endpoint, now: now) { $0.setActivity(activity) }
            }
            context.state.update(.joined)
        case .join(let invitation):
            let started = ContinuousClock.now
            guard !invitation.isExpired() else { throw HuddleError.invitationExpired(invitation.expiresAt) }
            let membership = try SessionMembership(
                joining: invitation.session, local: localRecord, invitationSecret: invitation.secret,
                members: invitation.members.map { (staticKey: $0.staticKey, addresses: [$0.address]) })
            // The ticket's relays carry the first handshake when the members named cannot be reached directly.
            let relays = invitation.relays
            try await install(membership) { _, endpoint, now in
                for relay in relays { endpoint.addRelay(relay, now: now) }
            }
            // The session core's timers (on the driver's timer) also ask again for a WELCOME that does not come.
            try await waitForJoin(context)
            metrics?.joined(after: ContinuousClock.now - started)
        }
    }

    func install(
        _ membership: SessionMembership,
        then body: @escaping @Sendable (inout SessionCores, inout Endpoint, Instant) -> Void
    ) async throws {
        let directory = dataRoot.appending(path: membership.session.description)
        // Creating the directory is file I/O too: off the loop (a store error becomes a HuddleError there).
        let store = try await Attachment.runBlocking { try FileChunkStore(directory: directory) }
        context?.journal.store = store
        generation += 1
        let generation = self.generation
        let core = self.core
        let storeWorker = makeStoreWorker(store: store, generation: generation)
        let output = try await driver.perform { endpoint, now in
            core.withLockedValue { box -> SessionCores.Output in
                var cores = SessionCores(
                    membership: membership, local: endpoint.staticKey, store: store, storeWorker: storeWorker,
                    generation: generation)
                cores.session.flush(&endpoint, now: now)
                body(&cores, &endpoint, now)
                let output = cores.drain(endpoint: &endpoint, now: now)
                box = cores
                return output
            }
        }
        await dispatch(output)
    }

    /// The worker that applies session `generation`'s store actions off the event loop; its results go through the
    /// cores on the loop, and their output to ``inbox`` like that of endpoint events.
    func makeStoreWorker(store: FileChunkStore, generation: Int) -> ChunkStoreWorker {
        let core = self.core
        let inbox = self.inbox
        let driver = self.driver
        return ChunkStoreWorker(
            store: store,
            handBack: { completions in
                driver.execute { endpoint, now in
                    let batch = core.withLockedValue { box -> EventInbox.Batch? in
                        guard box != nil, box!.generation == generation else { return nil }
                        box!.completeStoreActions(completions, endpoint: &endpoint, now: now)
                        return EventInbox.Batch(
                            generation: generation, output: box!.drain(endpoint: &endpoint, now: now))
                    }
                    if let batch, !batch.output.isEmpty { _ = inbox.push(batch) }
                }
            },
            resumeInput: { driver.resumeEvents() })
    }

    func waitForJoin(_ context: SessionContext) async throws {
        if case .joined = context.state.value { return }
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: Self.joinTimeout)
            await self?.joinTimedOut(context)
        }
        defer { timeout.cancel() }
        try await withCheckedThrowingContinuation { continuation in
            joinWaiters.append(continuation)
        }
    }

    func joinTimedOut(_ context: SessionContext) async {
        guard self.context === context, case .waiting = context.state.value else { return }
        failJoin(HuddleError.joinTimedOut(Self.joinTimeout))
        context.invalidate(.joinFailed("no member answered within \(Self.joinTimeout)"))
        await teardown(closing: true)
    }

    func failJoin(_ error: HuddleError) {
        let waiters = joinWaiters
        joinWaiters.removeAll()
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// Announces departure, waits (briefly) for it to be acknowledged, then closes every connection.
    func leave() async {
        guard let context, !context.isInvalidated else { return }
        _ = try? await performOnCore { cores, endpoint, now in
            cores.session.update(&endpoint, now: now) { $0.leave() }
        }
        await waitForAcknowledgements()
        await reportUnconfirmed()
        failJoin(.invalidated(.left))
        context.invalidate(.left)
        await teardown(closing: true)
    }

    /// Ends the session for everyone.
    func end() async throws {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        _ = try? await performOnCore { cores, endpoint, now in cores.session.update(&endpoint, now: now) { $0.end() } }
        await waitForAcknowledgements()
        await reportUnconfirmed()
        context.invalidate(.ended(by: nil))
        await teardown(closing: true)
    }

    /// Shuts the engine down (the node is closing).
    func shutdown() async {
        if let context, !context.isInvalidated {
            await leave()
            failJoin(.invalidated(.nodeShutDown))
            context.invalidate(.nodeShutDown)
        }
        eventTask?.cancel()
        inbox.finish()
        for subscription in subscriptions.values { subscription.queue.finish() }
        subscriptions.removeAll()
        unclaimedGraceSpent = true
        releaseUnclaimedWaiters()
    }

    /// Reports every messenger message still unacknowledged on a connection as failed with
    /// ``DeliveryFailure/Reason/sessionEnded``: the session is over for this node before they were confirmed.
    func reportUnconfirmed() async {
        let pending =
            (try? await driver.perform { endpoint, _ in
                endpoint.connectionIDs.compactMap { id -> (X25519PublicKey, Int)? in
                    guard let connection = endpoint.connection(id) else { return nil }
                    let count = connection.unacknowledgedMessageCount(on: Self.messengerChannel)
                    return count > 0 ? (connection.peer, count) : nil
                }
            }) ?? []
        for (peer, count) in pending { reportFailure(count: count, to: peer, reason: .sessionEnded) }
    }

    func waitForAcknowledgements() async {
        let clock = ContinuousClock()
        let deadline = clock.now + Self.leaveFlushTimeout
        while clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            let settled =
                (try? await driver.perform { endpoint, _ in
                    endpoint.connectionIDs.allSatisfy { id in
                        // A peer that already closed (it received our announcement and left) owes no ACK.
                        guard let connection = endpoint.connection(id), connection.isOpen else { return true }
                        return connection.bytesInFlight == 0
                    }
                }) ?? true
            if settled { return }
        }
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
        let ended = subscriptions
        subscriptions.removeAll()
        unclaimed.removeAll()
        releaseUnclaimedWaiters()
        participantCache.removeAll()
        for subscription in ended.values { subscription.queue.finish() }
        if let context, store != nil {
            context.journal.finish()
            context.journal.store = nil
        }
        let core = self.core
        let storeWorker = try? await driver.perform { endpoint, now in
            core.withLockedValue { box -> ChunkStoreWorker? in
                guard let session = box?.session else { return nil }
                defer { box = nil }
                // Close first: removing a peer closes its connection too, with a reason that says less.
                if closing {
                    for id in endpoint.connectionIDs {
                        endpoint.close(id, code: .noError, reason: "left the session", now: now)
                    }
                }
                for member in session.membership.roster where member.staticKey != endpoint.staticKey {
                    endpoint.removePeer(member.staticKey, now: now)
                }
                for grant in session.membership.openInvitations { endpoint.removeAdmission(grant.id) }
                if let id = session.membership.sessionAdmission { endpoint.removeAdmission(id) }
                return box?.storeWorker
            }
        }
        // No write may land after the directory is removed below. Leaving a session deletes its attachments from
        // this node (the others keep theirs).
        await storeWorker?.close()
        if let store { _ = try? await Attachment.runBlocking { store.removeDirectory() } }
    }

    /// Runs the cores' timers (journal requests and HAVE batches, redials, join retries, invitation expiry) on the
    /// driver's one event-loop timer: an idle node wakes only when one of them is due, and their outputs go to
    /// ``inbox`` like those of endpoint events.
    func installTimers() async {
        let core = self.core
        let inbox = self.inbox
        let client = TimerClient(
            deadline: { now in
                core.withLockedValue { box in box?.nextDeadline(now: now, unixNow: Date().timeIntervalSince1970) }
            },
            fire: { endpoint, now in
                let batch = core.withLockedValue { box -> EventInbox.Batch? in
                    guard box != nil else { return nil }
                    box!.runTimers(endpoint: &endpoint, now: now, unixNow: Date().timeIntervalSince1970)
                    return EventInbox.Batch(
                        generation: box!.generation, output: box!.drain(endpoint: &endpoint, now: now))
                }
                if let batch, !batch.output.isEmpty { _ = inbox.push(batch) }
            })
        try? await driver.setTimerClient(client)
    }

}
