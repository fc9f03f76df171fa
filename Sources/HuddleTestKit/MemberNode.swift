import DequeModule
import HuddleCrypto
@_spi(Testing) import HuddleProtocol
@_spi(Testing) import HuddleSession
import HuddleWire

/// A session member inside a ``SimulatedNetwork``: an ``Endpoint`` and the ``SessionMachine`` that ships, over an
/// ``InMemoryChunkStore``. It adds no session logic of its own: it feeds the machine what the network delivers and
/// records what comes out (session and journal events with their times), so tests can check membership, activity
/// convergence, message delivery, transfers and latency.
public struct MemberNode: SimulatedNode {
    /// The protocol core.
    public var endpoint: Endpoint
    /// The session machine (membership and journal), the same type the production engine drives.
    public var machine: SessionMachine<InMemoryChunkStore>
    /// Session events (journal messages excluded), with the time they happened.
    public private(set) var events: [(time: Instant, event: SessionEvent)] = []
    /// Journal events, with the time they happened (progress events are counted, not kept).
    public private(set) var journalEvents: [(time: Instant, event: JournalEvent)] = []
    /// Progress events seen.
    public private(set) var progressEvents = 0
    /// The latest time the node saw.
    public private(set) var now = Instant.zero
    /// How long each store action takes on a slow disk; `nil`: the store is applied at once, inside the journal core.
    public let storeLatency: Duration?
    /// Deferred store actions, applied one after another like the engine's off-loop store worker does, each
    /// ``storeLatency`` after the one before it (or after it was queued).
    private var storeLine = Deque<(due: Instant, action: JournalAction, verifier: ChunkVerifier?)>()

    /// A node around `endpoint` whose journal keeps chunks in `store` (a restarted node passes its old store). With
    /// `storeLatency`, store actions are deferred and each takes that long, one after another (a slow disk behind
    /// the production engine's off-loop store worker); a node that restarts loses the writes not yet applied.
    /// `timing` sets the machine's waits (the schedule explorer shortens the scheduling delay).
    public init(
        endpoint: Endpoint, store: InMemoryChunkStore = InMemoryChunkStore(), storeLatency: Duration? = nil,
        timing: SessionTiming = SessionTiming()
    ) {
        self.endpoint = endpoint
        self.storeLatency = storeLatency
        machine = SessionMachine(
            local: endpoint.staticKey, store: store, defersStoreActions: storeLatency != nil, timing: timing)
    }

    /// The membership core, absent until the node starts or joins a session.
    public var core: SessionCore? { machine.session }

    /// The journal.
    public var journal: JournalCore<InMemoryChunkStore> {
        get { machine.journal }
        _modify { yield &machine.journal }
    }

    /// Store actions queued and not applied yet.
    public var pendingStoreActions: Int { storeLine.count }

    /// Starts (or joins) the session `membership` describes.
    public mutating func start(_ membership: SessionMembership, now: Instant) {
        machine.start(membership, endpoint: &endpoint, now: now)
        drain(now: now)
    }

    /// Runs a local membership operation.
    public mutating func update(now: Instant, _ body: (inout SessionMembership) -> Void) {
        machine.update(&endpoint, now: now, body)
        drain(now: now)
    }

    /// Leaves the session (or ends it for everyone, with `endingSession`), as the engine does: the machine reports
    /// ``SessionEvent/departed(acknowledged:)`` once the announcement is acknowledged or its wait is over.
    public mutating func depart(endingSession: Bool = false, now: Instant) {
        machine.depart(endingSession: endingSession, endpoint: &endpoint, now: now)
        drain(now: now)
    }

    /// Forgets the session as the engine does once it is over
    /// (``SessionMachine/finish(closingConnections:endpoint:now:)``).
    public mutating func finish(closingConnections: Bool = true, now: Instant) {
        machine.finish(closingConnections: closingConnections, endpoint: &endpoint, now: now)
        drain(now: now)
    }

    /// Authors an attachment: stores `data`, computes its leaves, signs the manifest with `signingKey` and adds it.
    @discardableResult
    public mutating func share(
        _ data: [UInt8], id: AttachmentID, metadata: [UInt8] = [], signingKey: Ed25519PrivateKey, now: Instant
    ) throws -> AttachmentManifest {
        var hasher = MerkleLeafHasher()
        hasher.update(data)
        let (leaves, root) = hasher.finalize()
        let manifest = try AttachmentManifest(
            id: id, size: UInt64(data.count), root: root, metadata: metadata, signingKey: signingKey)
        machine.journal.store.put(id, data: data)
        try machine.updateJournal(&endpoint, now: now) { try $0.add(manifest, leaves: leaves, now: now) }
        drain(now: now)
        return manifest
    }

    /// Removes an attachment for everyone.
    public mutating func removeAttachment(_ id: AttachmentID, now: Instant) throws {
        try machine.updateJournal(&endpoint, now: now) { try $0.remove(id, now: now) }
        drain(now: now)
    }

    /// Makes this node serve corrupted chunks (one bit flipped in each), to test that receivers avoid it.
    public mutating func serveCorruptedChunks() {
        machine.journal.chunkTamper = { bytes in
            var tampered = bytes
            tampered[tampered.count - 1] ^= 0x80
            return tampered
        }
    }

    /// Sends an application message to the member with static key `peer` on its live connection (one still being
    /// set up too); `false` if there is no connection or the queue is full.
    @discardableResult
    public mutating func send(_ bytes: [UInt8], on channel: ChannelID, to peer: X25519PublicKey) -> Bool {
        sendRecorded(bytes, on: channel, to: peer) != nil
    }

    /// Sends like ``send(_:on:to:)`` and returns the connection and sequence number the message got, or `nil`.
    public mutating func sendRecorded(
        _ bytes: [UInt8], on channel: ChannelID, to peer: X25519PublicKey
    ) -> (connection: ConnectionID, sequence: MessageSequence)? {
        guard let id = endpoint.liveConnectionID(for: peer),
            let sequence = try? endpoint.send(bytes, on: channel, to: id)
        else { return nil }
        return (id, sequence)
    }

    /// Sends an unreliable datagram to `peer` on its established connection; `false` if there is none (or the
    /// datagram queue is full).
    @discardableResult
    public mutating func sendDatagram(_ bytes: [UInt8], on channel: ChannelID, to peer: X25519PublicKey) -> Bool {
        guard let id = endpoint.connectionID(for: peer) else { return false }
        return (try? endpoint.sendDatagram(bytes, on: channel, to: id)) != nil
    }

    /// The static keys of the members this node sees as active (itself included), sorted.
    public var activeKeys: [X25519PublicKey] {
        (core?.membership.activeMembers ?? []).map(\.staticKey).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    /// The payload of the activity this node sees.
    public var activityPayload: [UInt8]? { core?.membership.activity?.payload }

    /// Removes and returns the session events recorded so far (long runs consume them as they go).
    public mutating func takeEvents() -> [(time: Instant, event: SessionEvent)] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    /// Removes and returns the journal events recorded so far.
    public mutating func takeJournalEvents() -> [(time: Instant, event: JournalEvent)] {
        defer { journalEvents.removeAll(keepingCapacity: true) }
        return journalEvents
    }

    // MARK: - SimulatedNode

    public mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        endpoint.handle(datagram: datagram, from: source, now: now)
        drain(now: now)
    }

    /// Handles a batch the way the transport driver does: every datagram reaches the endpoint before the machine sees
    /// the events they produced.
    public mutating func handle(datagrams: [(bytes: [UInt8], source: NetworkAddress)], now: Instant) {
        for datagram in datagrams { endpoint.handle(datagram: datagram.bytes, from: datagram.source, now: now) }
        drain(now: now)
    }

    public mutating func handleTimeout(now: Instant) {
        endpoint.handleTimeout(now: now)
        machine.handleTimeout(endpoint: &endpoint, now: now)
        while let first = storeLine.first, first.due <= now {
            storeLine.removeFirst()
            if let completion = machine.journal.store.apply(first.action, verifier: first.verifier) {
                machine.complete(completion, endpoint: &endpoint, now: now)
            }
        }
        drain(now: now)
    }

    public mutating func pollTransmit(now: Instant) -> SimulatedTransmit? {
        guard let (destination, datagram) = endpoint.pollTransmit(now: now) else { return nil }
        return SimulatedTransmit(destination: destination, datagram: datagram)
    }

    public var nextDeadline: Instant? {
        mutating get {
            Instant.earliest(
                Instant.earliest(endpoint.nextDeadline, machine.nextDeadline), storeLine.first?.due)
        }
    }

    /// Feeds the endpoint's events to the machine and records its output.
    private mutating func drain(now: Instant) {
        self.now = now
        while let event = endpoint.pollEvent() { machine.handle(event, endpoint: &endpoint, now: now) }
        while let event = machine.pollEvent() { events.append((now, event)) }
        if storeLatency != nil {
            while let (action, verifier) = machine.pollStoreAction() {
                let start = max(storeLine.last?.due ?? now, now)
                storeLine.append((start + storeLatency!, action, verifier))
            }
        }
        while let event = machine.pollJournalEvent() {
            if case .progress = event {
                progressEvents += 1
            } else {
                journalEvents.append((now, event))
            }
        }
    }

    /// Application messages received, with their arrival time.
    public var messages: [(time: Instant, sender: X25519PublicKey, bytes: [UInt8])] {
        events.compactMap { entry in
            if case .message(let from, _, let bytes) = entry.event { return (entry.time, from.staticKey, bytes) }
            return nil
        }
    }

    /// When `id` completed on this node, if it did.
    public func completion(of id: AttachmentID) -> Instant? {
        journalEvents.first { entry in entry.event == .completed(id) }?.time
    }
}
