import DequeModule
import HuddleCrypto
import HuddleWire

/// Ties a ``JournalState`` to the node's ``Endpoint`` and a ``JournalChunkStore``, next to a ``SessionCore``: feed it
/// every ``SessionEvent`` (it consumes participant changes and journal messages, and hands back the rest), call
/// ``handleTimeout(endpoint:now:)`` at ``nextDeadline``. Journal messages from a member that break the protocol
/// close that member's connection with a protocol violation.
public struct JournalCore<Store: JournalChunkStore> {
    /// The journal state.
    public private(set) var state: JournalState
    /// The chunk store.
    public var store: Store
    /// Journal messages refused (their connection was closed with a protocol violation).
    public private(set) var violations = 0
    var events = Deque<JournalEvent>()
    /// Test hook: rewrites every outgoing CHUNK message (to simulate a holder that serves corrupted data).
    @_spi(Testing) public var chunkTamper: (@Sendable ([UInt8]) -> [UInt8])?

    /// A journal for the node with Noise static key `local`, keeping chunks in `store`.
    public init(local: X25519PublicKey, store: Store) {
        state = JournalState(local: local)
        self.store = store
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

    /// Applies every pending action: sends to `endpoint`, store operations to ``store``.
    public mutating func flush(_ endpoint: inout Endpoint, now: Instant) {
        while let action = state.pollAction() {
            switch action {
            case .send(let bytes, let channel, let peer):
                guard let id = endpoint.connectionID(for: peer) else { continue }
                let bytes = channel == JournalMessage.bulkChannel ? chunkTamper?(bytes) ?? bytes : bytes
                // A full queue means the peer stopped reading: the requester's timeout asks someone else.
                _ = try? endpoint.send(bytes, on: channel, to: id)
            case .writeChunk(let id, let index, let bytes):
                do {
                    try store.write(id, index: index, bytes: bytes)
                } catch let error as JournalStoreError {
                    state.storeFailed(id, error: error, now: now)
                } catch {
                    state.storeFailed(id, error: .failed("\(error)"), now: now)
                }
            case .readChunk(let id, let index, let peer):
                state.chunkRead(id, index: index, bytes: store.read(id, index: index), for: peer, now: now)
            case .scanStore(let id):
                // One chunk at a time: the scan never holds more than a chunk in memory.
                for index in store.storedIndices(id) {
                    if let bytes = store.read(id, index: index) { state.storedChunk(id, index: index, bytes: bytes) }
                }
                state.storeScanned(id, now: now)
            case .deleteAttachment(let id):
                store.delete(id)
            case .event(let event):
                events.append(event)
            }
        }
    }
}

extension JournalCore: Sendable where Store: Sendable {}
