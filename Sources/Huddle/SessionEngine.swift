import DequeModule
import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleTransport
import HuddleWire
import Logging
import NIOConcurrencyHelpers

/// A message on its way to ``Messenger`` subscriptions.
struct ReceivedMessage: Sendable {
    var envelope: MessageEnvelope
    var source: Participant
    var reliable: Bool
}

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
    /// Where sessions keep attachment chunks: one directory per session, deleted when the node leaves it.
    let dataRoot: URL
    private let core = NIOLockedValueBox<SessionCores?>(nil)
    /// The cores' output for endpoint events, from the event loop to ``runEvents()``.
    private let inbox = EventInbox(maxEvents: SessionEngine.maxPendingEvents, maxBytes: SessionEngine.maxPendingBytes)
    /// Counts installed sessions; outputs tagged with an earlier one are not dispatched.
    private var generation = 0
    private var context: SessionContext? {
        didSet { sendingContext.withLockedValue { $0 = context } }
    }
    /// ``context`` for ``send(_:reliable:to:)``, which runs off the actor.
    private let sendingContext = NIOLockedValueBox<SessionContext?>(nil)
    private var joinWaiters: [CheckedContinuation<Void, any Error>] = []
    /// Set by a `.joined` event; the waiters are resumed at the end of the output that carried it.
    private var joinCompleted = false
    private var subscriptions: [Int: Subscription] = [:]
    private var nextSubscription = 0
    private var unclaimed = Deque<ReceivedMessage>()
    /// Dispatches waiting for room in ``unclaimed`` (see ``unclaimedGracePeriod``), resumed by a subscription or
    /// when the grace period ends.
    private var unclaimedWaiters: [CheckedContinuation<Void, Never>] = []
    /// The grace period was spent without a subscription taking the unclaimed messages: drop at once until the next
    /// subscription.
    private var unclaimedGraceSpent = false
    /// Participants by static key, so routing a message does not compute the sender's fingerprint each time.
    private var participantCache: [X25519PublicKey: Participant] = [:]
    private var eventTask: Task<Void, Never>?
    /// Messages dropped because nobody subscribed to their type and the unclaimed buffer was full.
    private(set) var unclaimedDropped = 0
    /// Messages that were not valid messenger envelopes.
    private(set) var undecodableDropped = 0
    /// Drops not yet reported on ``GroupSession/messageDrops``: reported at the end of the batch that made them, one
    /// report per run of drops of one kind.
    private var pendingDrops: [MessageDrop] = []

    init(
        driver: UDPEndpointDriver, identity: Identity, name: String, advertisedAddresses: [NetworkAddress],
        dataRoot: URL, logger: Logger
    ) {
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
    private func runEvents() async {
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
        }
    }

    private func install(
        _ membership: SessionMembership,
        then body: @escaping @Sendable (inout SessionCores, inout Endpoint, Instant) -> Void
    ) async throws {
        let store: FileChunkStore
        do {
            store = try FileChunkStore(directory: dataRoot.appending(path: membership.session.description))
        } catch {
            throw HuddleError(error)
        }
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
    private func makeStoreWorker(store: FileChunkStore, generation: Int) -> ChunkStoreWorker {
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

    private func waitForJoin(_ context: SessionContext) async throws {
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

    private func joinTimedOut(_ context: SessionContext) async {
        guard self.context === context, case .waiting = context.state.value else { return }
        failJoin(HuddleError.joinTimedOut(Self.joinTimeout))
        context.invalidate(.joinFailed("no member answered within \(Self.joinTimeout)"))
        await teardown(closing: true)
    }

    private func failJoin(_ error: HuddleError) {
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
    private func reportUnconfirmed() async {
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

    private func waitForAcknowledgements() async {
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

    /// Forgets the session: closes its connections (when asked), removes its peers and admissions.
    private func teardown(closing: Bool) async {
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
        // No write may land after the directory is removed below.
        await storeWorker?.close()
        for subscription in subscriptions.values { subscription.queue.finish() }
        subscriptions.removeAll()
        unclaimed.removeAll()
        releaseUnclaimedWaiters()
        participantCache.removeAll()
        // Leaving a session deletes its attachments from this node (the others keep theirs).
        if let context, let store = context.journal.store {
            context.journal.finish()
            context.journal.store = nil
            _ = try? await Attachment.runBlocking { store.removeDirectory() }
        }
    }

    /// Runs the cores' timers (journal requests and HAVE batches, redials, join retries, invitation expiry) on the
    /// driver's one event-loop timer: an idle node wakes only when one of them is due, and their outputs go to
    /// ``inbox`` like those of endpoint events.
    private func installTimers() async {
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

    // MARK: - Local operations

    /// Stores a new attachment with `importing` (on the blocking-I/O pool), signs its manifest and adds it to the
    /// journal, which announces it to every member.
    func addAttachment(
        metadata: [UInt8],
        importing:
            @escaping @Sendable (FileChunkStore, AttachmentID) throws -> (
                leaves: [UInt8], root: [UInt8], size: UInt64
            )
    ) async throws -> Attachment {
        guard let context, case .joined = context.state.value, let store = context.journal.store else {
            throw HuddleError.notJoined
        }
        var random = SystemRandomGenerator()
        let id = AttachmentID(bytes: random.bytes(count: AttachmentID.length))!
        let imported = try await Attachment.runBlocking { try importing(store, id) }
        do {
            let manifest = try AttachmentManifest(
                id: id, size: imported.size, root: imported.root, metadata: metadata, signingKey: identity.signingKey)
            let refusal = try await performOnCore { cores, endpoint, now in
                cores.journal.update(&endpoint, now: now) { journal -> JournalError? in
                    do throws(JournalError) {
                        try journal.add(manifest, leaves: imported.leaves, now: now)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            if let refusal { throw refusal }
        } catch let error as JournalError {
            _ = try? await Attachment.runBlocking { store.delete(id) }
            throw HuddleError(error)
        } catch {
            _ = try? await Attachment.runBlocking { store.delete(id) }
            throw error
        }
        guard let attachment = context.journal.attachment(id) else { throw HuddleError.attachmentRemoved }
        return attachment
    }

    /// The members known to hold every chunk of an attachment.
    func completeHolders(_ id: AttachmentID) async throws -> Int {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        return try await performOnCore { cores, _, _ in cores.journal.state.completeHolders(id) }
    }

    /// Removes an attachment for every member.
    func removeAttachment(_ id: AttachmentID) async throws {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        let refusal = try await performOnCore { cores, endpoint, now in
            cores.journal.update(&endpoint, now: now) { journal -> JournalError? in
                do throws(JournalError) {
                    try journal.remove(id, now: now)
                    return nil
                } catch {
                    return error
                }
            }
        }
        if let refusal { throw HuddleError(refusal) }
    }

    /// Publishes a new activity payload to every member.
    func setActivity(_ payload: [UInt8]) async throws {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        try await performOnCore { cores, endpoint, now in
            cores.session.update(&endpoint, now: now) { $0.setActivity(payload) }
        }
    }

    /// Opens an invitation valid for `duration` and returns its ticket, naming the current members.
    func makeInvitation(validFor duration: Duration) async throws -> Invitation {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        var random = SystemRandomGenerator()
        let secret = SecureBytes(count: 32, using: &random)
        let expiresAt = Date().addingTimeInterval(Double(duration.components.seconds))
        let grant = try InvitationGrant(secret: secret, expiresAt: UInt64(expiresAt.timeIntervalSince1970))
        let (hints, relays) = try await performOnCore { cores, endpoint, now in
            let hints = cores.session.update(&endpoint, now: now) { membership in
                membership.openInvitation(grant)
                return membership.ticketHints(limit: Invitation.maxMembers)
            }
            return (hints, endpoint.relays(now: now).map(\.address))
        }
        let members = hints.compactMap { hint in
            hint.addresses.first.map { Invitation.Member(staticKey: hint.staticKey, address: $0) }
        }
        return Invitation(
            session: context.id, secret: secret, expiresAt: expiresAt,
            inviterSigningKey: identity.publicIdentity.signingKey, inviterName: name, members: members, relays: relays)
    }

    /// Sends an encoded envelope to `recipients` (`nil`: every other active participant).
    ///
    /// Runs off the actor (the session's state and participants are lock-protected snapshots), so sending does not
    /// wait for the engine. Reliable messages go into the transport's outbound queue addressed by the recipient's
    /// static key (the event loop resolves it to the recipient's current connection when it drains the queue, so a
    /// member that rejoined on a new connection is reached there) and this returns once they are queued; it suspends
    /// only while a recipient's queue is full. Unreliable datagrams are handed to the endpoint in one event-loop call
    /// for all recipients.
    nonisolated func send(_ bytes: [UInt8], reliable: Bool, to recipients: Set<Participant>?) async throws {
        guard let context = sendingContext.withLockedValue({ $0 }), case .joined = context.state.value else {
            throw HuddleError.notJoined
        }
        let local = context.local
        let participants = context.participants.value
        let keys: [X25519PublicKey]
        if let recipients {
            for recipient in recipients where !participants.contains(recipient) && recipient != local {
                throw HuddleError.notAParticipant(recipient)
            }
            keys = recipients.compactMap { $0 == local ? nil : $0.staticKey }
        } else {
            keys = participants.compactMap { $0 == local ? nil : $0.staticKey }
        }
        if reliable {
            for key in keys {
                do throws(TransportError) {
                    try await driver.enqueue(bytes, on: Self.messengerChannel, toPeer: key)
                } catch .connectionClosed {
                    // The participant left while we were sending; its departure is reported on its own.
                    continue
                } catch {
                    throw HuddleError.transport(error)
                }
            }
            return
        }
        do {
            try await driver.perform { endpoint, _ in
                for key in keys {
                    guard let connection = endpoint.connectionID(for: key) else { continue }
                    do throws(ProtocolError) {
                        try endpoint.sendDatagram(bytes, on: Self.messengerChannel, to: connection)
                    } catch .connectionClosed {
                        // The participant left while we were sending; its departure is reported on its own.
                        continue
                    }
                }
            }
        } catch let error as TransportError {
            throw HuddleError.transport(error)
        } catch let error as ProtocolError {
            if case .messageTooLarge(let size, let limit) = error {
                throw HuddleError.datagramTooLarge(size: size, limit: limit)
            }
            throw HuddleError.transport(.protocolError(error))
        }
    }

    /// Connection figures for every other active participant.
    func peerStatistics() async throws -> [PeerStatistics] {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        let others = Array(context.participants.value.subtracting([context.local]))
        return try await driver.perform { endpoint, _ in
            others.compactMap { participant -> PeerStatistics? in
                guard let id = endpoint.connectionID(for: participant.staticKey),
                    let connection = endpoint.connection(id)
                else { return nil }
                let path: PeerPath =
                    switch connection.route {
                    case .direct(let address): .direct(address)
                    case .relayed(let relay, _): .relayed(via: relay)
                    }
                return PeerStatistics(
                    participant: participant, smoothedRTT: connection.rtt.smoothed,
                    packetsSent: connection.statistics.packetsSent, packetsLost: connection.statistics.packetsLost,
                    path: path, datagramSize: connection.pathDatagramSize)
            }
        }
    }

    // MARK: - Subscriptions

    /// A new subscription; messages that arrived before it and match are handed over first.
    func subscribe(
        reliable: Bool, kind: MessageEnvelope.Kind, typeName: String
    ) async -> (
        Int, BoundedAsyncQueue<ReceivedMessage>
    ) {
        let queue = BoundedAsyncQueue<ReceivedMessage>(capacity: Self.subscriptionCapacity)
        let subscription = Subscription(reliable: reliable, kind: kind, typeName: typeName, queue: queue)
        let id = nextSubscription
        nextSubscription += 1
        if let context, context.isInvalidated {
            queue.finish()
            return (id, queue)
        }
        subscriptions[id] = subscription
        var kept = Deque<ReceivedMessage>()
        while let message = unclaimed.popFirst() {
            if subscription.matches(message) {
                await queue.push(message)
            } else {
                kept.append(message)
            }
        }
        unclaimed = kept
        unclaimedGraceSpent = false
        releaseUnclaimedWaiters()
        return (id, queue)
    }

    /// How many messages wait for a subscription (for tests).
    var unclaimedCount: Int { unclaimed.count }

    /// How many messages each subscription holds (for tests).
    func bufferedMessageCounts() -> [Int] {
        subscriptions.values.map { $0.queue.count }
    }

    /// Ends a subscription (its consumer went away).
    func unsubscribe(_ id: Int) {
        subscriptions.removeValue(forKey: id)?.queue.finish()
    }

    // MARK: - Events

    private func performOnCore<Result: Sendable>(
        _ body: @escaping @Sendable (inout SessionCores, inout Endpoint, Instant) throws -> Result
    ) async throws -> Result {
        let core = self.core
        let (result, output) = try await driver.perform { endpoint, now in
            try core.withLockedValue { box -> (Result, SessionCores.Output) in
                guard box != nil else { throw HuddleError.notJoined }
                let result = try body(&box!, &endpoint, now)
                return (result, box!.drain(endpoint: &endpoint, now: now))
            }
        }
        await dispatch(output)
        return result
    }

    /// Dispatches one output in order. Consecutive messenger messages are routed together: each subscription gets
    /// its share in one push (one wake-up of its reader per batch, not per message).
    private func dispatch(_ output: SessionCores.Output) async {
        var routed = RoutedMessages()
        for event in output.sessionEvents {
            switch event {
            case .message(let from, let channel, let bytes) where channel == Self.messengerChannel:
                await route(bytes, from: from, reliable: true, into: &routed)
            case .datagram(let from, let channel, let bytes) where channel == Self.messengerChannel:
                await route(bytes, from: from, reliable: false, into: &routed)
            default:
                await deliver(&routed)
                await dispatch(event)
            }
        }
        await deliver(&routed)
        reportDrops()
        if joinCompleted {
            joinCompleted = false
            let waiters = joinWaiters
            joinWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        }
        guard let context, !context.isInvalidated else { return }
        for event in output.journalEvents { context.journal.apply(event) }
    }

    private func dispatch(_ event: SessionEvent) async {
        guard let context, !context.isInvalidated else { return }
        switch event {
        case .joined:
            let found = ActivityCoding.identifier(of: context.activity.value) ?? "nothing"
            guard found == context.activityIdentifier else {
                let error = HuddleError.activityMismatch(expected: context.activityIdentifier, found: found)
                failJoin(error)
                context.invalidate(.joinFailed(error.description))
                await teardown(closing: true)
                return
            }
            context.state.update(.joined)
            // The joiner resumes once the rest of this output (the members' arrivals) is applied too.
            joinCompleted = true
        case .participantJoined(let member):
            context.journal.saw(Participant(member))
            var participants = context.participants.value
            participants.update(with: participant(member))
            context.participants.update(participants)
            context.changes.yield(.joined(Participant(member)))
            logger.debug("participant joined", metadata: ["participant": "\(Participant(member))"])
        case .participantLeft(let member, let reason):
            var participants = context.participants.value
            participants.remove(Participant(member))
            context.participants.update(participants)
            context.changes.yield(.left(Participant(member), reason: ParticipantChange.DepartureReason(reason)))
            logger.debug(
                "participant left", metadata: ["participant": "\(Participant(member))", "reason": "\(reason)"])
        case .activityChanged(let record):
            context.activity.update(record.payload)
        case .ended(let by):
            await reportUnconfirmed()
            failJoin(.invalidated(.ended(by: by.map(Participant.init))))
            context.invalidate(.ended(by: by.map(Participant.init)))
            await teardown(closing: true)
        case .joinFailed(let reason):
            failJoin(.joinFailed(reason))
            context.invalidate(.joinFailed(reason))
            await teardown(closing: true)
        case .message, .datagram:
            // Messenger messages are routed by `dispatch(_: SessionCores.Output)` before they get here; messages on
            // other channels belong to the cores.
            break
        case .delivered:
            break
        case .undelivered(let peer, _, let messages, let reason):
            let count = messages.count { $0.channel == Self.messengerChannel }
            reportFailure(count: count, to: peer, reason: reason)
        case .unsent(let peer, let channel, let count, let reason):
            guard channel == Self.messengerChannel else { return }
            guard let peer else {
                logger.warning("messages for an unknown peer were not sent", metadata: ["count": "\(count)"])
                return
            }
            reportFailure(count: count, to: peer, reason: reason)
        }
    }

    /// Reports `count` messenger messages for `peer` that will not be delivered, through the session's
    /// ``GroupSession/deliveryFailures`` and the log.
    private func reportFailure(count: Int, to peer: X25519PublicKey, reason: DeliveryFailureReason) {
        guard count > 0, let context else { return }
        guard let participant = participantCache[peer] else {
            logger.warning(
                "messages for a peer that never was a participant were not delivered", metadata: ["count": "\(count)"])
            return
        }
        let failure = DeliveryFailure(participant: participant, count: count, reason: DeliveryFailure.Reason(reason))
        context.deliveryFailures.yield(failure)
        logger.notice("\(failure)")
    }

    /// The participant `member` is, from the cache when its record still names it the same way.
    private func participant(_ member: MemberRecord) -> Participant {
        if let cached = participantCache[member.staticKey], cached.name == member.name,
            cached.signingKey == member.identity.signingKey
        {
            return cached
        }
        let participant = Participant(member)
        participantCache[member.staticKey] = participant
        return participant
    }

    /// Messages on their way to subscriptions, per subscription, in arrival order.
    struct RoutedMessages {
        var targets: [(id: Int, queue: BoundedAsyncQueue<ReceivedMessage>, messages: [ReceivedMessage])] = []
    }

    /// Routes a messenger message (see ``collect(_:into:)``); when it finds the unclaimed buffer full, delivers what
    /// was collected, waits for a subscription or the end of ``unclaimedGracePeriod``, and routes it again.
    private func route(
        _ bytes: [UInt8], from member: MemberRecord, reliable: Bool, into routed: inout RoutedMessages
    )
        async
    {
        guard context.map({ !$0.isInvalidated }) ?? false else { return }
        guard let envelope = MessageEnvelope(decoding: bytes) else {
            undecodableDropped += 1
            noteDrop(
                MessageDrop(
                    participant: participant(member), typeName: nil, reliable: reliable, count: 1,
                    reason: .undecodable))
            return
        }
        let message = ReceivedMessage(envelope: envelope, source: participant(member), reliable: reliable)
        while !collect(message, into: &routed) {
            await deliver(&routed)
            await waitForUnclaimedRoom()
            guard context.map({ !$0.isInvalidated }) ?? false else { return }
        }
    }

    /// Waits until a subscription takes unclaimed messages or ``unclaimedGracePeriod`` ends (then marks the grace
    /// spent). Returns at once when it is already spent.
    private func waitForUnclaimedRoom() async {
        guard !unclaimedGraceSpent else { return }
        logger.notice(
            "messages arrive faster than the app subscribes to them; holding the session back",
            metadata: ["unclaimed": "\(unclaimed.count)"])
        let grace = Task { [weak self] in
            try? await Task.sleep(for: Self.unclaimedGracePeriod)
            await self?.unclaimedGraceEnded()
        }
        await withCheckedContinuation { unclaimedWaiters.append($0) }
        grace.cancel()
    }

    private func unclaimedGraceEnded() {
        guard !unclaimedWaiters.isEmpty else { return }
        unclaimedGraceSpent = true
        releaseUnclaimedWaiters()
    }

    /// Resumes the dispatches waiting for room in the unclaimed buffer (a subscription came, the grace period ended,
    /// or the session ended).
    private func releaseUnclaimedWaiters() {
        let waiters = unclaimedWaiters
        unclaimedWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    private func dropUnclaimed(_ message: ReceivedMessage) {
        unclaimedDropped += 1
        noteDrop(
            MessageDrop(
                participant: message.source, typeName: message.envelope.typeName, reliable: message.reliable,
                count: 1, reason: .noSubscriber))
    }

    /// Adds `drop` to the reports made at the end of this batch (to the last one when it is of the same kind).
    private func noteDrop(_ drop: MessageDrop) {
        if let last = pendingDrops.last, last.isSameKind(as: drop) {
            pendingDrops[pendingDrops.count - 1] = last.adding(drop.count)
        } else {
            pendingDrops.append(drop)
        }
    }

    /// Reports the drops of the batch just dispatched on ``GroupSession/messageDrops`` and in the log.
    private func reportDrops() {
        guard !pendingDrops.isEmpty else { return }
        for drop in pendingDrops {
            context?.messageDrops.yield(drop)
            logger.warning("\(drop)", metadata: ["dropped in all": "\(unclaimedDropped + undecodableDropped)"])
        }
        pendingDrops.removeAll(keepingCapacity: true)
    }

    /// Adds `message` to the share of every subscription it matches, or keeps it for a later subscription; returns
    /// `false` when nobody subscribed and the unclaimed buffer is full (nothing was done with it).
    private func collect(_ message: ReceivedMessage, into routed: inout RoutedMessages) -> Bool {
        var claimed = false
        for (id, target) in subscriptions where target.matches(message) {
            claimed = true
            if let index = routed.targets.firstIndex(where: { $0.id == id }) {
                routed.targets[index].messages.append(message)
            } else {
                routed.targets.append((id, target.queue, [message]))
            }
        }
        guard claimed else {
            if unclaimed.count < Self.maxUnclaimedMessages {
                unclaimed.append(message)
                return true
            }
            if unclaimedGraceSpent {
                dropUnclaimed(message)
                return true
            }
            return false
        }
        return true
    }

    /// Pushes the collected messages into their subscriptions (waiting while one is full: that is the backpressure)
    /// and empties `routed`. A subscription whose reader went away is removed.
    private func deliver(_ routed: inout RoutedMessages) async {
        guard !routed.targets.isEmpty else { return }
        let targets = routed.targets
        routed.targets.removeAll()
        for target in targets where !(await target.queue.push(contentsOf: target.messages)) {
            subscriptions[target.id] = nil
        }
    }
}
