import DequeModule
import HuddleCrypto
import HuddleProtocol
import Logging
import NIOConcurrencyHelpers

/// Where messenger messages go: the ``Messenger`` streams' subscriptions, and the messages nobody subscribed to yet.
///
/// Lock-protected and shared by the ``SessionEngine`` actor and the transport's event loop, so that in the common
/// case (only messages, every target stream has room, nothing older still waiting for the engine) the event loop
/// delivers a batch of messages straight into the streams with ``deliverDirectly(_:generation:)``, waking each reader
/// once, without a switch to the engine. Everything else (a full stream, which is backpressure; a membership event;
/// any batch while older ones are still pending) goes through the engine, which routes with ``collect(_:from:reliable:into:)``
/// and waits where a stream is full.
///
/// Order per stream holds because only one side produces at a time: the event loop delivers directly only while the
/// engine has nothing pending (``EventInbox/isIdle``), and a new subscription takes the unclaimed messages under the
/// same lock the event loop routes under.
final class MessageRouter: Sendable {
    /// One `messages(of:)` stream's subscription.
    struct Subscription: Sendable {
        var reliable: Bool
        var kind: MessageEnvelope.Kind
        var typeName: String
        var queue: BoundedAsyncQueue<ReceivedMessage>

        func matches(_ message: ReceivedMessage) -> Bool {
            message.reliable == reliable && message.envelope.kind == kind && message.envelope.typeName == typeName
        }
    }

    /// Messages on their way to subscriptions, per subscription, in arrival order (the engine's path).
    struct Routed {
        var targets: [(id: Int, queue: BoundedAsyncQueue<ReceivedMessage>, messages: [ReceivedMessage])] = []
    }

    private struct State {
        /// The session whose messages are routed; nothing is routed while there is none or it is invalidated.
        var context: SessionContext?
        /// The generation of the session cores whose output is routed directly.
        var generation = 0
        var subscriptions: [Int: Subscription] = [:]
        var nextSubscription = 0
        var unclaimed = Deque<ReceivedMessage>()
        /// Participants by static key, so routing does not compute the sender's fingerprint per message.
        var participants: [X25519PublicKey: Participant] = [:]
        var unclaimedDropped = 0
        var undecodableDropped = 0
        var deliveredDirectly = 0
    }

    /// Counters for logs and tests.
    struct Counters {
        /// Messages dropped because nobody subscribed to their type and the unclaimed buffer was full.
        var unclaimedDropped: Int
        /// Messages that were not valid messenger envelopes.
        var undecodableDropped: Int
        /// Messages the event loop delivered straight into streams.
        var deliveredDirectly: Int
    }

    let subscriptionCapacity: Int
    let maxUnclaimed: Int
    let logger: Logger
    private let state = NIOLockedValueBox(State())

    init(subscriptionCapacity: Int, maxUnclaimed: Int, logger: Logger) {
        precondition(maxUnclaimed <= subscriptionCapacity, "a new stream must hold every unclaimed message")
        self.subscriptionCapacity = subscriptionCapacity
        self.maxUnclaimed = maxUnclaimed
        self.logger = logger
    }

    // MARK: - Session and subscriptions

    /// Routes the messages of `context` from now on, those of cores of `generation` also directly; forgets the
    /// unclaimed messages and participants of an earlier session.
    func begin(_ context: SessionContext, generation: Int) {
        state.withLockedValue { state in
            state.context = context
            state.generation = generation
            state.unclaimed.removeAll()
            state.participants.removeAll()
        }
    }

    /// Ends every subscription and forgets the session (it was left or ended).
    func end() {
        let queues = state.withLockedValue { state in
            defer {
                state.subscriptions.removeAll()
                state.unclaimed.removeAll()
                state.participants.removeAll()
            }
            return state.subscriptions.values.map(\.queue)
        }
        for queue in queues { queue.finish() }
    }

    /// A new subscription; messages that arrived before it and match are handed over first (they fit: there are at
    /// most ``maxUnclaimed``, no more than a stream holds).
    func subscribe(
        reliable: Bool, kind: MessageEnvelope.Kind, typeName: String
    ) -> (Int, BoundedAsyncQueue<ReceivedMessage>) {
        let queue = BoundedAsyncQueue<ReceivedMessage>(capacity: subscriptionCapacity)
        let subscription = Subscription(reliable: reliable, kind: kind, typeName: typeName, queue: queue)
        let (id, invalidated, handed) = state.withLockedValue {
            state -> (Int, Bool, [(CheckedContinuation<ReceivedMessage?, Never>, ReceivedMessage)]) in
            let id = state.nextSubscription
            state.nextSubscription += 1
            if let context = state.context, context.isInvalidated { return (id, true, []) }
            state.subscriptions[id] = subscription
            var handed: [(CheckedContinuation<ReceivedMessage?, Never>, ReceivedMessage)] = []
            var kept = Deque<ReceivedMessage>()
            while let message = state.unclaimed.popFirst() {
                guard subscription.matches(message) else {
                    kept.append(message)
                    continue
                }
                if case .handed(let consumer) = queue.tryPush(message) { handed.append((consumer, message)) }
            }
            state.unclaimed = kept
            return (id, false, handed)
        }
        if invalidated { queue.finish() }
        for (consumer, message) in handed { consumer.resume(returning: message) }
        return (id, queue)
    }

    /// Ends a subscription (its consumer went away).
    func unsubscribe(_ id: Int) {
        state.withLockedValue { $0.subscriptions.removeValue(forKey: id) }?.queue.finish()
    }

    /// How many messages each subscription holds.
    func bufferedMessageCounts() -> [Int] {
        state.withLockedValue { $0.subscriptions.values.map { $0.queue.count } }
    }

    /// The counters.
    var counters: Counters {
        state.withLockedValue {
            Counters(
                unclaimedDropped: $0.unclaimedDropped, undecodableDropped: $0.undecodableDropped,
                deliveredDirectly: $0.deliveredDirectly)
        }
    }

    // MARK: - Routing

    /// What routing one message found.
    private enum Route {
        /// Dropped (undecodable, no session) or kept unclaimed: nothing to deliver.
        case settled(droppedType: String?)
        /// For these subscriptions.
        case targets(ReceivedMessage, [(id: Int, subscription: Subscription)])
    }

    private static func participant(_ member: MemberRecord, in state: inout State) -> Participant {
        if let cached = state.participants[member.staticKey], cached.name == member.name,
            cached.signingKey == member.identity.signingKey
        {
            return cached
        }
        let participant = Participant(member)
        state.participants[member.staticKey] = participant
        return participant
    }

    private func route(_ bytes: [UInt8], from member: MemberRecord, reliable: Bool, in state: inout State) -> Route {
        guard let context = state.context, !context.isInvalidated else { return .settled(droppedType: nil) }
        guard let envelope = MessageEnvelope(decoding: bytes) else {
            state.undecodableDropped += 1
            return .settled(droppedType: nil)
        }
        let message = ReceivedMessage(
            envelope: envelope, source: Self.participant(member, in: &state), reliable: reliable)
        var targets: [(id: Int, subscription: Subscription)] = []
        for (id, subscription) in state.subscriptions where subscription.matches(message) {
            targets.append((id, subscription))
        }
        guard targets.isEmpty else { return .targets(message, targets) }
        if state.unclaimed.count < maxUnclaimed {
            state.unclaimed.append(message)
            return .settled(droppedType: nil)
        }
        state.unclaimedDropped += 1
        return .settled(droppedType: envelope.typeName)
    }

    private func logDropped(_ types: [String]) {
        guard !types.isEmpty else { return }
        let dropped = counters.unclaimedDropped
        for type in types {
            logger.warning(
                "dropped a message nobody subscribed to", metadata: ["type": "\(type)", "dropped": "\(dropped)"])
        }
    }

    /// The engine's path: adds a messenger message to the share of every subscription it matches (or keeps it
    /// unclaimed, or drops it when it cannot be decoded or the session is over).
    func collect(_ bytes: [UInt8], from member: MemberRecord, reliable: Bool, into routed: inout Routed) {
        let found = state.withLockedValue { state -> Route in
            self.route(bytes, from: member, reliable: reliable, in: &state)
        }
        switch found {
        case .settled(let dropped):
            logDropped(dropped.map { [$0] } ?? [])
        case .targets(let message, let targets):
            for (id, subscription) in targets {
                if let index = routed.targets.firstIndex(where: { $0.id == id }) {
                    routed.targets[index].messages.append(message)
                } else {
                    routed.targets.append((id, subscription.queue, [message]))
                }
            }
        }
    }

    /// The engine's path, continued: pushes the collected messages into their subscriptions, waiting while one is
    /// full (that is the backpressure), and empties `routed`. A subscription whose reader went away is removed.
    /// Runs on the caller's executor (the engine actor), which it gives up only while it waits for room.
    nonisolated(nonsending) func deliver(_ routed: inout Routed) async {
        guard !routed.targets.isEmpty else { return }
        let targets = routed.targets
        routed.targets.removeAll()
        for target in targets where !(await target.queue.push(contentsOf: target.messages)) {
            unsubscribe(target.id)
        }
    }

    /// The event loop's path: delivers the leading messenger messages of `events` (output of cores of `generation`)
    /// straight into their streams, without waiting, and returns how many events it took care of. Stops at the first
    /// event that is not a messenger message and at the first message a target stream has no room for; the caller
    /// passes the rest to the engine. Call only while the engine has nothing pending.
    func deliverDirectly(_ events: [SessionEvent], generation: Int) -> Int {
        var handed: [(CheckedContinuation<ReceivedMessage?, Never>, ReceivedMessage)] = []
        var droppedTypes: [String] = []
        let taken = state.withLockedValue { state -> Int in
            guard state.generation == generation else { return 0 }
            var taken = 0
            for event in events {
                let reliable: Bool
                let member: MemberRecord
                let bytes: [UInt8]
                switch event {
                case .message(let from, let channel, let payload) where channel == SessionEngine.messengerChannel:
                    (reliable, member, bytes) = (true, from, payload)
                case .datagram(let from, let channel, let payload) where channel == SessionEngine.messengerChannel:
                    (reliable, member, bytes) = (false, from, payload)
                default:
                    return taken
                }
                switch route(bytes, from: member, reliable: reliable, in: &state) {
                case .settled(let dropped):
                    if let dropped { droppedTypes.append(dropped) }
                case .targets(let message, let targets):
                    // All or nothing per message: with room in every target (only this side produces now, so the
                    // room stays), or not at all.
                    guard targets.allSatisfy({ $0.subscription.queue.hasRoom }) else { return taken }
                    for (id, subscription) in targets {
                        switch subscription.queue.tryPush(message) {
                        case .buffered: break
                        case .handed(let consumer): handed.append((consumer, message))
                        case .full: preconditionFailure("a stream filled up while only the event loop produced")
                        case .finished: state.subscriptions[id] = nil
                        }
                    }
                    state.deliveredDirectly += 1
                }
                taken += 1
            }
            return taken
        }
        for (consumer, message) in handed { consumer.resume(returning: message) }
        logDropped(droppedTypes)
        return taken
    }
}
