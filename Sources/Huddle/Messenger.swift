import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleTransport
import HuddleWire
import NIOConcurrencyHelpers

/// Sends and receives messages among a session's participants, like Apple's `GroupSessionMessenger`.
///
/// - ``DeliveryMode/reliable``: exactly once and in order per sender and ``Priority`` (FIFO), retransmitted until
///   acknowledged; `send` suspends while a recipient's window is full instead of failing. Up to 256 KiB per message.
///   Order holds per messenger configuration: messengers of another ``Priority`` or ``Redundancy`` may overtake.
/// - ``DeliveryMode/unreliable``: best effort, never retransmitted, for state that is stale once replaced (cursor
///   positions); each message must fit one datagram.
///
/// Messages are Codable values (sent as JSON, tagged with their type name) or raw bytes. A receiver only delivers a
/// message to a `messages(of:)` stream of the same type name; a message it cannot decode (a newer version's type,
/// a changed shape) is skipped and reported on ``GroupSession/messageDrops`` (`typeMismatch`), so version your
/// message types and keep old fields decodable. Messages that arrive
/// before anyone iterates a matching stream are kept (up to 1024) and handed to the first one, so a late joiner's
/// catch-up state is not lost while it sets up.
///
/// Iterate every stream you create (or stop iterating it): an unread stream buffers 1024 messages, then holds up
/// the session's delivery, which is how a slow reader slows senders down instead of losing messages.
public final class Messenger: Sendable {
    /// How messages travel.
    public enum DeliveryMode: Sendable, Hashable {
        /// Exactly once, in order per sender, retransmitted.
        case reliable
        /// Best effort, at most once, unordered.
        case unreliable
    }

    /// Where a reliable message waits when a connection has more to send than it may: small interactive messages
    /// (strokes, moves, chat) go ahead of bulk ones (snapshots, files cut into messages) on the same connection.
    /// Bulk still gets at least one packet in eight while it has something to send, so it is never starved; it
    /// shares that share with journal attachments. Order holds among the messages of one priority from one sender;
    /// a sender's interactive and bulk messages may overtake each other. Unreliable messages ignore it: datagrams
    /// always go first.
    public enum Priority: Sendable, Hashable {
        /// Ahead of bulk messages and attachments (the default).
        case interactive
        /// Behind interactive messages, beside journal attachments.
        case bulk
    }

    /// Whether small reliable messages are sent more than once, so a lost packet costs them nothing.
    public enum Redundancy: Sendable, Hashable {
        /// Each message is sent once and retransmitted if lost (the default).
        case none
        /// Each interactive reliable message of up to 1,100 bytes encoded is sent twice, in consecutive packets: the
        /// copy arrives when the first is lost, so the message does not wait for loss recovery (measured in the
        /// simulator on a 40 ms path with 2 % loss each way: round-trip p99 1.0 round trip instead of 2.0), at
        /// about twice the bytes (507 instead of 267 per round trip of 64-byte messages). For inputs and strokes on
        /// lossy paths. Bulk-priority and larger messages go once; receivers need nothing.
        case duplicate
    }

    /// Who receives a message: the earlier name of ``Participants``.
    @available(*, deprecated, renamed: "Participants")
    public typealias Recipients = Participants

    /// Where a message came from.
    public struct Context: Sendable {
        /// The participant who sent it.
        public let source: Participant
    }

    /// The largest reliable message, encoded: 256 KiB.
    public static let maxMessageSize = WireLimits.maxMessageSize
    /// The largest unreliable message, encoded: what fits in one 1200-byte datagram.
    public static let maxUnreliableMessageSize = 1100

    let engine: SessionEngine
    /// The session this messenger sends to and receives from, and no other.
    let context: SessionContext
    /// The delivery mode.
    public let deliveryMode: DeliveryMode
    /// Where its reliable messages wait behind others (see ``Priority``).
    public let priority: Priority
    /// Whether its small interactive messages are sent twice (see ``Redundancy``).
    public let redundancy: Redundancy
    /// The channel its reliable messages travel on.
    private var reliableChannel: ChannelID {
        switch (priority, redundancy) {
        case (.bulk, _): SessionEngine.messengerBulkChannel
        case (.interactive, .none): SessionEngine.messengerChannel
        case (.interactive, .duplicate): SessionEngine.messengerDuplicatedChannel
        }
    }
    /// The recipients of the last `.only(...)` send, reused while the next one names the same participants.
    private let lastGroup = NIOLockedValueBox(RecipientGroup.empty)

    /// A messenger for `session`. Several messengers may share a session. It acts on that session only: once it is
    /// over, sending throws ``HuddleError/invalidated(_:)`` and its message streams end, whatever session the node
    /// joins next. Its reliable messages wait behind others by `priority`, and small interactive ones go twice with
    /// `redundancy` ``Redundancy/duplicate``.
    public init(
        session: GroupSession<some GroupActivity>, deliveryMode: DeliveryMode = .reliable,
        priority: Priority = .interactive, redundancy: Redundancy = .none
    ) {
        self.engine = session.engine
        self.context = session.context
        self.deliveryMode = deliveryMode
        self.priority = priority
        self.redundancy = redundancy
    }

    /// Sends a Codable value to `recipients` and returns its receipt once the message is accepted (queued for every
    /// recipient; the call waits only while a recipient's queue is full). A reliable message is then delivered to each
    /// recipient exactly once, in order, or named in a ``DeliveryFailure`` on ``GroupSession/deliveryFailures``; await
    /// ``outcome(of:)`` for one message's fate.
    ///
    /// - Throws: ``HuddleError/messageTooLarge(size:limit:)``, ``HuddleError/datagramTooLarge(size:limit:)``,
    ///   ``HuddleError/notJoined``, ``HuddleError/invalidated(_:)`` (this session is over),
    ///   ``HuddleError/notAParticipant(_:)``, ``HuddleError/coding(_:)``.
    @discardableResult
    public func send<Message: Encodable & Sendable>(
        _ message: Message, to recipients: Participants = .all
    ) async throws(HuddleError) -> MessageReceipt {
        let payload: Data
        do {
            payload = try JSONEncoder().encode(message)
        } catch {
            throw .coding(CodingFailure(.encoding, Message.self, error))
        }
        let envelope = MessageEnvelope(
            kind: .codable, typeName: MessageTypeName.of(Message.self), payload: Array(payload))
        return try await send(envelope: envelope, to: recipients)
    }

    /// Sends raw bytes; otherwise as ``send(_:to:)-(Message,_)``.
    @discardableResult
    public func send(_ data: Data, to recipients: Participants = .all) async throws(HuddleError) -> MessageReceipt {
        try await send(envelope: MessageEnvelope(kind: .raw, typeName: "", payload: Array(data)), to: recipients)
    }

    /// How the message `receipt` names ended: waits until every recipient confirmed it or was reported unable to (a
    /// recipient that leaves, becomes unreachable or restarts, or the end of the session, settles it). An unreliable
    /// message is ``DeliveryOutcome/unconfirmed`` at once.
    ///
    /// - Throws: ``HuddleError/foreignReceipt(_:)`` for a receipt this session's messengers did not give.
    public func outcome(of receipt: MessageReceipt) async throws(HuddleError) -> DeliveryOutcome {
        guard receipt.session == context.id, context.deliveries.issued(receipt.id) else {
            throw .foreignReceipt(receipt)
        }
        guard receipt.deliveryMode == .reliable else { return .unconfirmed }
        return await context.deliveries.outcome(of: receipt.id)
    }

    private func send(
        envelope: MessageEnvelope, to recipients: Participants
    ) async throws(HuddleError) -> MessageReceipt {
        let bytes = envelope.encoded()
        switch deliveryMode {
        case .reliable where bytes.count > Self.maxMessageSize:
            throw .messageTooLarge(size: bytes.count, limit: Self.maxMessageSize)
        case .unreliable where bytes.count > Self.maxUnreliableMessageSize:
            throw .datagramTooLarge(size: bytes.count, limit: Self.maxUnreliableMessageSize)
        default:
            break
        }
        try context.requireJoined()
        let targets = try recipientGroup(recipients)
        let id: UInt64
        if deliveryMode == .reliable {
            id = context.deliveries.open(for: targets)
            try await sendReliably(bytes, to: targets, receipt: id)
        } else {
            id = context.deliveries.nextID()
            try await sendUnreliably(bytes, to: targets.members.map(\.staticKey))
        }
        return MessageReceipt(id: id, session: context.id, recipients: targets.participants, deliveryMode: deliveryMode)
    }

    /// The recipients, this node left out.
    ///
    /// - Throws: ``HuddleError/notAParticipant(_:)`` for a recipient that is not an active participant.
    private func recipientGroup(_ recipients: Participants) throws(HuddleError) -> RecipientGroup {
        switch recipients {
        case .all:
            return context.everyoneElse
        case .only(let only):
            let (local, participants) = (context.local, context.participants.value)
            for recipient in only where !participants.contains(recipient) && recipient != local {
                throw .notAParticipant(recipient)
            }
            // A conversation sends to the same few participants again and again: their group is built once.
            return lastGroup.withLockedValue { last in
                if last.participants.count == only.count - (only.contains(local) ? 1 : 0),
                    last.participants.isSubset(of: only)
                {
                    return last
                }
                last = RecipientGroup(only.subtracting([local]))
                return last
            }
        }
    }

    /// Queues `bytes` for each of `targets` in the transport's outbound queue, addressed by static key (the event
    /// loop resolves it to the recipient's current connection when it drains the queue, so a member that rejoined on
    /// a new connection is reached there) and tagged with its receipt number; returns once they are queued,
    /// suspending only while a recipient's queue is full. It does not wait for the engine: sending runs beside the
    /// dispatch of what arrives.
    private func sendReliably(
        _ bytes: [UInt8], to targets: RecipientGroup, receipt: UInt64
    ) async throws(HuddleError) {
        var queued = 0
        defer { engine.metrics?.sent(count: queued, bytes: bytes.count, reliable: true) }
        for key in targets.members.lazy.map(\.staticKey) {
            do throws(TransportError) {
                try await engine.driver.enqueue(bytes, on: reliableChannel, toPeer: key, tag: receipt)
                queued += 1
            } catch {
                // Not queued (the node is shutting down): this recipient's share failed with the session; the
                // caller gets the error and no receipt.
                _ = context.deliveries.failed([receipt], for: key, reason: .sessionEnded)
                throw .transport(error)
            }
        }
    }

    /// Hands `bytes` to the endpoint for each of `keys` with a connection, in one event-loop step, without waiting
    /// for the loop to run it while fewer than ``DatagramSendGate/limit`` such steps wait (the loop runs them in
    /// order); beyond that it waits for the step, as a reliable send waits for room. A recipient without a connection
    /// is skipped: unreliable messages are best effort.
    private func sendUnreliably(_ bytes: [UInt8], to keys: [X25519PublicKey]) async throws(HuddleError) {
        let metrics = engine.metrics
        let handOver: @Sendable (inout Endpoint, Instant) -> Void = { endpoint, _ in
            var sent = 0
            for key in keys {
                guard let connection = endpoint.connectionID(for: key) else { continue }
                // The size was checked against the smallest datagram any path carries; a connection that closed
                // meanwhile belongs to a participant whose departure is reported on its own.
                if (try? endpoint.sendDatagram(bytes, on: SessionEngine.messengerChannel, to: connection)) != nil {
                    sent += 1
                }
            }
            metrics?.sent(count: sent, bytes: bytes.count, reliable: false)
        }
        let gate = engine.datagramGate
        guard gate.admit() else {
            do {
                try await engine.driver.perform(handOver)
            } catch {
                throw .transport(error as? TransportError ?? .driverClosed)
            }
            return
        }
        engine.driver.execute { endpoint, now in
            handOver(&endpoint, now)
            gate.release()
        }
    }

    /// Messages of type `Message` from other participants, with their source.
    public func messages<Message: Decodable & Sendable>(of type: Message.Type) -> MessageStream<Message> {
        MessageStream(
            engine: engine, context: context, reliable: deliveryMode == .reliable, kind: .codable,
            typeName: MessageTypeName.of(Message.self)
        ) { payload in try? JSONDecoder().decode(Message.self, from: Data(payload)) }
    }

    /// Raw-byte messages from other participants, with their source.
    public func messages(of type: Data.Type) -> MessageStream<Data> {
        MessageStream(engine: engine, context: context, reliable: deliveryMode == .reliable, kind: .raw, typeName: "") {
            Data($0)
        }
    }
}

/// The messages of one type a ``Messenger`` receives, as `(message, context)` pairs; ends when the session does.
public struct MessageStream<Message: Sendable>: AsyncSequence, Sendable {
    public typealias Element = (message: Message, context: Messenger.Context)

    let engine: SessionEngine
    let context: SessionContext
    let reliable: Bool
    let kind: MessageEnvelope.Kind
    let typeName: String
    let decode: @Sendable ([UInt8]) -> Message?

    init(
        engine: SessionEngine, context: SessionContext, reliable: Bool, kind: MessageEnvelope.Kind, typeName: String,
        decode: @escaping @Sendable ([UInt8]) -> Message?
    ) {
        self.engine = engine
        self.context = context
        self.reliable = reliable
        self.kind = kind
        self.typeName = typeName
        self.decode = decode
    }

    /// Iterates the messages.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: MessageStream
        var subscription: Subscription?

        /// The next message, or `nil` when the session is over.
        public mutating func next() async -> Element? {
            if subscription == nil {
                let (id, queue) = await stream.engine.subscribe(
                    reliable: stream.reliable, kind: stream.kind, typeName: stream.typeName, in: stream.context)
                subscription = Subscription(id: id, queue: queue, engine: stream.engine)
            }
            while let received = await subscription!.queue.next() {
                if let message = stream.decode(received.envelope.payload) {
                    return (message, Messenger.Context(source: received.source))
                }
                // Skipped, and said so: a message the application never sees is reported on messageDrops.
                await stream.engine.reportTypeMismatch(received)
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }

    /// Ends the engine-side subscription when the iterator goes away.
    final class Subscription: Sendable {
        let id: Int
        let queue: BoundedAsyncQueue<ReceivedMessage>
        let engine: SessionEngine

        init(id: Int, queue: BoundedAsyncQueue<ReceivedMessage>, engine: SessionEngine) {
            self.id = id
            self.queue = queue
            self.engine = engine
        }

        deinit {
            queue.finish()
            let (engine, id) = (self.engine, self.id)
            Task { await engine.unsubscribe(id) }
        }
    }
}
