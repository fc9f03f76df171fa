import DequeModule
import HuddleCrypto
@_spi(Testing) import HuddleProtocol
@_spi(Testing) import HuddleSession
import HuddleWire

/// A session member with a journal inside a ``SimulatedNetwork``: an ``Endpoint`` driven through a ``SessionCore``
/// and a ``JournalCore`` over an ``InMemoryChunkStore``. Records session and journal events with their times so
/// tests can check transfers, progress and message latency.
public struct JournalNode: SessionMemberNode {
    /// The protocol core.
    public var endpoint: Endpoint
    /// The session layer, absent until the node starts or joins a session.
    public var core: SessionCore?
    /// The journal.
    public var journal: JournalCore<InMemoryChunkStore>
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
    /// Deferred store actions (``JournalCore/defersStoreActions``), applied one after another like the file worker
    /// does, each ``storeLatency`` after the one before it (or after it was queued).
    private var storeLine = Deque<(due: Instant, action: JournalAction, verifier: ChunkVerifier?)>()

    /// A node around `endpoint` whose journal keeps chunks in `store` (a restarted node passes its old store). With
    /// `storeLatency`, store actions are deferred and each takes that long, one after another (a slow disk behind
    /// the production engine's off-loop store worker); a node that restarts loses the writes not yet applied.
    public init(endpoint: Endpoint, store: InMemoryChunkStore = InMemoryChunkStore(), storeLatency: Duration? = nil) {
        self.endpoint = endpoint
        self.storeLatency = storeLatency
        journal = JournalCore(local: endpoint.staticKey, store: store, defersStoreActions: storeLatency != nil)
    }

    /// Store actions queued and not applied yet.
    public var pendingStoreActions: Int { storeLine.count }

    /// Starts (or joins) the session `membership` describes.
    public mutating func start(_ membership: SessionMembership, now: Instant) {
        var core = SessionCore(membership: membership)
        core.flush(&endpoint, now: now)
        self.core = core
        drain(now: now)
    }

    /// Runs a local membership operation.
    public mutating func update(now: Instant, _ body: (inout SessionMembership) -> Void) {
        guard var core else { return }
        core.update(&endpoint, now: now, body)
        self.core = core
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
        journal.store.put(id, data: data)
        try journal.update(&endpoint, now: now) { try $0.add(manifest, leaves: leaves, now: now) }
        drain(now: now)
        return manifest
    }

    /// Removes an attachment for everyone.
    public mutating func removeAttachment(_ id: AttachmentID, now: Instant) throws {
        try journal.update(&endpoint, now: now) { try $0.remove(id, now: now) }
        drain(now: now)
    }

    /// Makes this node serve corrupted chunks (one bit flipped in each), to test that receivers avoid it.
    public mutating func serveCorruptedChunks() {
        journal.chunkTamper = { bytes in
            var tampered = bytes
            tampered[tampered.count - 1] ^= 0x80
            return tampered
        }
    }

    /// Sends an unreliable datagram to `peer` on its established connection; `false` if there is none (or the
    /// datagram queue is full).
    @discardableResult
    public mutating func sendDatagram(_ bytes: [UInt8], on channel: ChannelID, to peer: X25519PublicKey) -> Bool {
        guard let id = endpoint.connectionID(for: peer) else { return false }
        return (try? endpoint.sendDatagram(bytes, on: channel, to: id)) != nil
    }

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

    public mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        endpoint.handle(datagram: datagram, from: source, now: now)
        drain(now: now)
    }

    public mutating func handleTimeout(now: Instant) {
        endpoint.handleTimeout(now: now)
        if var core {
            core.handleTimeout(endpoint: &endpoint, now: now)
            self.core = core
        }
        if let deadline = journal.nextDeadline, deadline <= now {
            journal.handleTimeout(endpoint: &endpoint, now: now)
        }
        while let first = storeLine.first, first.due <= now {
            storeLine.removeFirst()
            if let completion = journal.store.apply(first.action, verifier: first.verifier) {
                journal.complete(completion, endpoint: &endpoint, now: now)
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
                Instant.earliest(endpoint.nextDeadline, journal.nextDeadline),
                Instant.earliest(core?.nextDeadline, storeLine.first?.due))
        }
    }

    private mutating func drain(now: Instant) {
        self.now = now
        while true {
            // The core is used in place: copying it out and back made its next mutation copy every buffer it holds.
            if let event = endpoint.pollEvent() {
                core?.handle(event, endpoint: &endpoint, now: now)
            } else if let event = core?.pollEvent() {
                if let passed = journal.handle(event, endpoint: &endpoint, now: now) { events.append((now, passed)) }
            } else {
                break
            }
        }
        if let storeLatency {
            while let action = journal.pollStoreAction() {
                let start = max(storeLine.last?.due ?? now, now)
                storeLine.append((start + storeLatency, action, journal.verifier(for: action)))
            }
        }
        while let event = journal.pollEvent() {
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
