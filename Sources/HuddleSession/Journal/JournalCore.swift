import DequeModule
import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Ties a ``JournalState`` to the node's ``Endpoint`` and a ``JournalChunkStore``, next to a ``SessionCore``: feed it
/// every ``SessionEvent`` (it consumes participant changes and journal messages, and hands back the rest), call
/// ``handleTimeout(endpoint:now:)`` at ``nextDeadline``. Journal messages from a member that break the protocol
/// close that member's connection with a protocol violation.
///
/// Store actions are applied to ``store`` where they arise, or, with ``defersStoreActions``, handed to the driver
/// (``pollStoreAction()``), which applies them elsewhere (a file store off the event loop) one after another and
/// reports each back with ``complete(_:endpoint:now:)``. Deferred, an event for the application that arises while
/// store actions of its attachment are outstanding waits in the same line, so that an attachment is reported
/// complete only after its last chunk is written; events of other attachments (an attachment added locally, whose
/// chunks are already stored) are not held back.
public struct JournalCore<Store: JournalChunkStore> {
    /// The journal state.
    public private(set) var state: JournalState
    /// The chunk store, which the core calls itself unless ``defersStoreActions``; a deferring driver applies the
    /// actions to it (or a copy of it).
    public var store: Store
    /// Whether store actions go to the driver (``pollStoreAction()``) instead of to ``store``.
    public let defersStoreActions: Bool
    /// Journal messages refused (their connection was closed with a protocol violation).
    public private(set) var violations = 0
    var events = Deque<JournalEvent>()
    /// Deferred store actions (and the events behind them) the driver has not taken yet.
    var storeActions = Deque<JournalAction>()
    /// Deferred actions handed out (or waiting to be) and not completed yet, per attachment (an event waits only
    /// behind its own attachment's actions).
    var outstandingByAttachment: [AttachmentID: Int] = [:]
    /// Test hook: rewrites every outgoing CHUNK message (to simulate a holder that serves corrupted data).
    @_spi(Testing) public var chunkTamper: (@Sendable ([UInt8]) -> [UInt8])?

    /// A journal for the node with Noise static key `local`, keeping chunks in `store`; with `defersStoreActions`,
    /// the driver applies the store actions (``pollStoreAction()``).
    public init(local: X25519PublicKey, store: Store, defersStoreActions: Bool = false) {
        state = JournalState(local: local)
        self.store = store
        self.defersStoreActions = defersStoreActions
    }

    /// The next deferred store action for the driver to apply, in order, then to report with
    /// ``complete(_:endpoint:now:)``; `nil` when none waits (always `nil` unless ``defersStoreActions``).
    /// ``JournalAction/event(_:)`` here is an event that waited behind store actions: report it back as
    /// ``JournalStoreCompletion/event(_:)`` when the actions before it are done.
    public mutating func pollStoreAction() -> JournalAction? { storeActions.popFirst() }

    /// Deferred actions handed out (or waiting to be) and not completed yet.
    public var outstandingStoreActions: Int { outstandingByAttachment.values.reduce(0, +) }

    /// Takes back one deferred action the driver applied, in the order they were polled, then applies what follows
    /// from it.
    public mutating func complete(_ completion: JournalStoreCompletion, endpoint: inout Endpoint, now: Instant) {
        let id = completion.attachmentID
        if let count = outstandingByAttachment[id] { outstandingByAttachment[id] = count > 1 ? count - 1 : nil }
        take(completion, now: now)
        flush(&endpoint, now: now)
    }

    /// The verifier a store action needs (reads and scans check what they find), taken when the action is applied
    /// or polled: the attachment's ``ChunkVerifier``, or `nil` for other actions or an attachment without leaves.
    public func verifier(for action: JournalAction) -> ChunkVerifier? {
        switch action {
        case .readChunk(let id, _, _), .scanStore(let id): state.chunkVerifier(id)
        default: nil
        }
    }

    /// Hands a store action's result to the state.
    private mutating func take(_ completion: JournalStoreCompletion, now: Instant) {
        switch completion {
        case .written(let id, _, let failure):
            if let failure { state.storeFailed(id, error: failure, now: now) }
        case .read(let id, let index, let bytes, let peer):
            state.chunkRead(id, index: index, bytes: bytes, for: peer, now: now, verified: true)
        case .scanned(let id, let verified):
            state.storedVerifiedChunks(id, indices: verified)
            state.storeScanned(id, now: now)
        case .deleted:
            break
        case .event(let event):
            events.append(event)
        }
    }

    /// The next journal event for the application, or `nil`.
    public mutating func pollEvent() -> JournalEvent? { events.popFirst() }

    /// When ``handleTimeout(endpoint:now:)`` must next run.
    public var nextDeadline: Instant? { state.nextDeadline }

    /// Whether `channel` carries journal messages.
    public static func isJournalChannel(_ channel: ChannelID) -> Bool {
        channel == JournalMessage.controlChannel || channel == JournalMessage.bulkChannel
    }

    /// Feeds one session event. Returns `nil` when the journal consumed it (a journal message), else the event
    /// for the application (participant changes are both used and passed on).
    public mutating func handle(_ event: SessionEvent, endpoint: inout Endpoint, now: Instant) -> SessionEvent? {
        switch event {
        case .participantJoined(let member):
            state.memberSeen(signingKey: member.identity.signingKey, now: now)
            state.peerActive(member.staticKey, now: now)
        case .participantLeft(let member, _):
            state.peerInactive(member.staticKey, now: now)
        case .message(let member, let channel, let bytes) where Self.isJournalChannel(channel):
            do {
                try state.receive(bytes, from: member.staticKey, now: now)
            } catch {
                violations += 1
                if let id = endpoint.connectionID(for: member.staticKey) {
                    endpoint.close(id, code: .protocolViolation, reason: error.description, now: now)
                }
            }
            flush(&endpoint, now: now)
            return nil
        default:
            break
        }
        flush(&endpoint, now: now)
        return event
    }

    /// Runs the journal's timers.
    public mutating func handleTimeout(endpoint: inout Endpoint, now: Instant) {
        state.handleTimeout(now: now)
        flush(&endpoint, now: now)
    }

    /// Runs a local operation (``JournalState/add(_:leaves:now:)``, ``JournalState/remove(_:now:)``), then applies
    /// its actions.
    public mutating func update<Result>(
        _ endpoint: inout Endpoint, now: Instant, _ body: (inout JournalState) throws -> Result
    ) rethrows -> Result {
        let result = try body(&state)
        flush(&endpoint, now: now)
        return result
    }

    /// Applies every pending action: sends to `endpoint`, store actions to ``store`` (or, with
    /// ``defersStoreActions``, to the driver's line).
    public mutating func flush(_ endpoint: inout Endpoint, now: Instant) {
        while let action = state.pollAction() {
            switch action {
            case .send(let bytes, let channel, let peer):
                guard let id = endpoint.connectionID(for: peer) else { continue }
                let bytes = channel == JournalMessage.bulkChannel ? chunkTamper?(bytes) ?? bytes : bytes
                // A full queue means the peer stopped reading: the requester's timeout asks someone else.
                _ = try? endpoint.send(bytes, on: channel, to: id)
            case .writeChunk, .readChunk, .scanStore, .deleteAttachment:
                applyToStore(action, now: now)
            case .event(let event):
                if defersStoreActions && outstandingByAttachment[event.attachmentID] != nil {
                    deferToDriver(action, about: event.attachmentID)
                } else {
                    events.append(event)
                }
            }
        }
    }

    /// Queues an action (or an event that waits behind them) for the driver.
    private mutating func deferToDriver(_ action: JournalAction, about id: AttachmentID) {
        storeActions.append(action)
        outstandingByAttachment[id, default: 0] += 1
    }

    /// Applies a store action to ``store``, or queues it for the driver when ``defersStoreActions``.
    private mutating func applyToStore(_ action: JournalAction, now: Instant) {
        guard !defersStoreActions else {
            switch action {
            case .writeChunk(let id, _, _), .readChunk(let id, _, _), .scanStore(let id), .deleteAttachment(let id):
                deferToDriver(action, about: id)
            case .send, .event:
                break
            }
            return
        }
        if let completion = store.apply(action, verifier: verifier(for: action)) { take(completion, now: now) }
    }
}

extension JournalCore: Sendable where Store: Sendable {}
