import DequeModule
import HuddleProtocol
import HuddleSession

/// Messenger subscriptions and the routing of received messages into them: matching by kind and type name,
/// batching per subscription, the unclaimed buffer for messages that arrive before their subscription (with its grace
/// period), and the reports of what was dropped.
extension SessionEngine {

    /// A new subscription; messages that arrived before it and match are handed over first.
    func subscribe(
        reliable: Bool, kind: MessageEnvelope.Kind, typeName: String, in context: SessionContext
    ) async -> (
        Int, BoundedAsyncQueue<ReceivedMessage>
    ) {
        let queue = BoundedAsyncQueue<ReceivedMessage>(capacity: Self.subscriptionCapacity)
        let subscription = Subscription(
            context: context, reliable: reliable, kind: kind, typeName: typeName, queue: queue)
        let id = nextSubscription
        nextSubscription += 1
        // A stream of a session that is over ends at once.
        if context.isInvalidated {
            queue.finish()
            return (id, queue)
        }
        subscriptions[id] = subscription
        // One of a session not begun yet (an application subscribes before it joins) waits for it: only the current
        // session's messages are routed, and only to its own subscriptions.
        guard context === self.context else { return (id, queue) }
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
        let loop = self.loop
        driver.execute { _, _ in loop.value?.machine.subscriberArrived() }
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

    struct RoutedMessages {
        var targets: [(id: Int, queue: BoundedAsyncQueue<ReceivedMessage>, messages: [ReceivedMessage])] = []
    }

    /// Routes a messenger message (see ``collect(_:into:)``); when it finds the unclaimed buffer full, delivers what
    /// was collected, waits for a subscription or the end of ``unclaimedGracePeriod``, and routes it again.
    func route(
        _ bytes: [UInt8], from member: MemberRecord, reliable: Bool, into routed: inout RoutedMessages
    )
        async
    {
        guard context.map({ !$0.isInvalidated }) ?? false else { return }
        metrics?.received(bytes: bytes.count, reliable: reliable)
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
    func waitForUnclaimedRoom() async {
        guard !unclaimedGraceSpent else { return }
        logger.notice(
            "messages arrive faster than the app subscribes to them; holding the session back",
            metadata: ["unclaimed": "\(unclaimed.count)"])
        // The grace period is a deadline of the machine (``SessionMachine/waitForSubscriber(now:)``), run by the
        // driver's timer like every other: its end comes back through ``unclaimedGraceEnded()``.
        let loop = self.loop
        _ = try? await driver.perform { _, now in loop.value?.machine.waitForSubscriber(now: now) }
        await withCheckedContinuation { unclaimedWaiters.append($0) }
    }

    func unclaimedGraceEnded() {
        guard !unclaimedWaiters.isEmpty else { return }
        unclaimedGraceSpent = true
        releaseUnclaimedWaiters()
    }

    /// Resumes the dispatches waiting for room in the unclaimed buffer (a subscription came, the grace period ended,
    /// or the session ended).
    func releaseUnclaimedWaiters() {
        let waiters = unclaimedWaiters
        unclaimedWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    func dropUnclaimed(_ message: ReceivedMessage) {
        unclaimedDropped += 1
        noteDrop(
            MessageDrop(
                participant: message.source, typeName: message.envelope.typeName, reliable: message.reliable,
                count: 1, reason: .noSubscriber))
    }

    /// Adds `drop` to the reports made at the end of this batch (to the last one when it is of the same kind).
    /// A subscription could not decode `received` as its type: reported at once (the stream skips it).
    func reportTypeMismatch(_ received: ReceivedMessage) {
        noteDrop(
            MessageDrop(
                participant: received.source, typeName: received.envelope.typeName, reliable: received.reliable,
                count: 1, reason: .typeMismatch))
        reportDrops()
    }

    func noteDrop(_ drop: MessageDrop) {
        if let last = pendingDrops.last, last.isSameKind(as: drop) {
            pendingDrops[pendingDrops.count - 1] = last.adding(drop.count)
        } else {
            pendingDrops.append(drop)
        }
    }

    /// Reports the drops of the batch just dispatched on ``GroupSession/messageDrops`` and in the log.
    func reportDrops() {
        guard !pendingDrops.isEmpty else { return }
        for drop in pendingDrops {
            context?.messageDrops.yield(drop)
            logger.warning("\(drop)", metadata: ["dropped in all": "\(unclaimedDropped + undecodableDropped)"])
        }
        pendingDrops.removeAll(keepingCapacity: true)
    }

    /// Adds `message` to the share of every subscription it matches, or keeps it for a later subscription; returns
    /// `false` when nobody subscribed and the unclaimed buffer is full (nothing was done with it).
    func collect(_ message: ReceivedMessage, into routed: inout RoutedMessages) -> Bool {
        var claimed = false
        for (id, target) in subscriptions where target.context === context && target.matches(message) {
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
    func deliver(_ routed: inout RoutedMessages) async {
        guard !routed.targets.isEmpty else { return }
        let targets = routed.targets
        routed.targets.removeAll()
        for target in targets where !(await target.queue.push(contentsOf: target.messages)) {
            subscriptions[target.id] = nil
        }
    }
}
