import DequeModule
import HuddleSession

/// Decides where each messenger message a node receives goes: to the subscriptions of its session that match its
/// kind and type name, into a bounded buffer while nobody has subscribed to it yet, or, once that buffer is full and
/// its grace period is spent, away with a ``MessageDrop`` report.
///
/// A plain value the engine owns (no I/O, no waiting): the engine does the pushing and the waiting it asks for
/// (``place(_:in:into:)`` returning `false`), so every routing rule is testable without a node.
struct MessageRouter {
    /// One `messages(of:)` or raw stream of one session.
    struct Subscription {
        /// The session whose messages it receives (one not begun yet, or the current one).
        var context: SessionContext
        var reliable: Bool
        var kind: MessageEnvelope.Kind
        var typeName: String
        var queue: BoundedAsyncQueue<ReceivedMessage>

        func matches(_ message: ReceivedMessage) -> Bool {
            message.reliable == reliable && message.envelope.kind == kind && message.envelope.typeName == typeName
        }
    }

    /// Messages on their way to subscriptions, per subscription, in arrival order: pushed together, so a reader
    /// wakes once per batch, not once per message.
    struct Batch {
        var targets: [(id: Int, queue: BoundedAsyncQueue<ReceivedMessage>, messages: [ReceivedMessage])] = []

        var isEmpty: Bool { targets.isEmpty }
    }

    /// How many messages wait for a subscription at most.
    let unclaimedLimit: Int
    private(set) var subscriptions: [Int: Subscription] = [:]
    private var nextID = 0
    /// Messages of the current session that no subscription took yet, oldest first.
    private(set) var unclaimed = Deque<ReceivedMessage>()
    /// The grace period was spent without a subscription taking the unclaimed messages: what finds the buffer full
    /// is dropped at once, until the next subscription of the current session.
    var graceSpent = false
    /// Messages dropped (for want of a subscriber, not envelopes, not of their stream's type) since the node started.
    private(set) var droppedCount = 0
    /// Drops not reported yet: one report per run of drops of one kind.
    private var pendingDrops: [MessageDrop] = []

    /// A router that keeps at most `unclaimedLimit` messages for subscriptions that do not exist yet.
    init(unclaimedLimit: Int) {
        self.unclaimedLimit = unclaimedLimit
    }

    /// Adds `subscription` and returns its id with the unclaimed messages it takes, oldest first. A subscription of
    /// a session that is not `current` (not begun yet) takes none: they belong to the current session.
    mutating func add(_ subscription: Subscription, current: SessionContext?) -> (id: Int, backlog: [ReceivedMessage]) {
        let id = nextID
        nextID += 1
        subscriptions[id] = subscription
        guard subscription.context === current else { return (id, []) }
        var backlog: [ReceivedMessage] = []
        var kept = Deque<ReceivedMessage>()
        while let message = unclaimed.popFirst() {
            if subscription.matches(message) { backlog.append(message) } else { kept.append(message) }
        }
        unclaimed = kept
        // A new subscription may be what the held messages waited for: the next full buffer gets a grace period.
        graceSpent = false
        return (id, backlog)
    }

    /// Removes subscription `id` (its reader went away, or its queue finished).
    mutating func remove(_ id: Int) -> Subscription? {
        subscriptions.removeValue(forKey: id)
    }

    /// Removes and returns every subscription of `context` (its session is over); the unclaimed messages go too.
    mutating func removeAll(of context: SessionContext?) -> [Subscription] {
        let ended = subscriptions.filter { $0.value.context === context }
        subscriptions = subscriptions.filter { $0.value.context !== context }
        unclaimed.removeAll()
        return Array(ended.values)
    }

    /// Removes and returns every subscription (the node shuts down).
    mutating func removeAll() -> [Subscription] {
        defer { subscriptions.removeAll() }
        unclaimed.removeAll()
        return Array(subscriptions.values)
    }

    /// Forgets the unclaimed messages (a new session begins).
    mutating func clearUnclaimed() {
        unclaimed.removeAll()
    }

    /// Adds `message` of session `current` to the share in `batch` of every subscription it matches, or keeps it for
    /// a later subscription, or drops it (reported) once the buffer is full and its grace period spent. Returns
    /// `false`, doing nothing, when nobody subscribed, the buffer is full and the grace period is not spent: the
    /// caller then holds the session back until a subscription comes or the grace period ends, and asks again.
    mutating func place(_ message: ReceivedMessage, in current: SessionContext, into batch: inout Batch) -> Bool {
        var claimed = false
        for (id, target) in subscriptions where target.context === current && target.matches(message) {
            claimed = true
            if let index = batch.targets.firstIndex(where: { $0.id == id }) {
                batch.targets[index].messages.append(message)
            } else {
                batch.targets.append((id, target.queue, [message]))
            }
        }
        if claimed { return true }
        if unclaimed.count < unclaimedLimit {
            unclaimed.append(message)
            return true
        }
        guard graceSpent else { return false }
        note(
            MessageDrop(
                participant: message.source, typeName: message.envelope.typeName, reliable: message.reliable,
                count: 1, reason: .noSubscriber))
        return true
    }

    /// Counts and notes a message from `participant` that was not a messenger envelope.
    mutating func noteUndecodable(from participant: Participant, reliable: Bool) {
        note(MessageDrop(participant: participant, typeName: nil, reliable: reliable, count: 1, reason: .undecodable))
    }

    /// Notes that a subscription could not decode `received` as its type (its stream skipped it).
    mutating func noteTypeMismatch(_ received: ReceivedMessage) {
        note(
            MessageDrop(
                participant: received.source, typeName: received.envelope.typeName, reliable: received.reliable,
                count: 1, reason: .typeMismatch))
    }

    /// The drops noted since the last call, runs of one kind merged into one report each.
    mutating func takeDrops() -> [MessageDrop] {
        defer { pendingDrops.removeAll(keepingCapacity: true) }
        return pendingDrops
    }

    private mutating func note(_ drop: MessageDrop) {
        droppedCount += drop.count
        if let last = pendingDrops.last, last.isSameKind(as: drop) {
            pendingDrops[pendingDrops.count - 1] = last.adding(drop.count)
        } else {
            pendingDrops.append(drop)
        }
    }
}
