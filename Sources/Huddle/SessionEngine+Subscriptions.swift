import HuddleProtocol
import HuddleSession

/// Messenger subscriptions: the engine's side of ``MessageRouter``, doing the pushing and the waiting the router's
/// decisions ask for (a full subscription holds the session back; so does a full unclaimed buffer, for the grace
/// period), and reporting what was dropped.
extension SessionEngine {
    /// A new subscription of `context`'s session; messages that arrived before it and match are handed over first.
    func subscribe(
        reliable: Bool, kind: MessageEnvelope.Kind, typeName: String, in context: SessionContext
    ) async -> (Int, BoundedAsyncQueue<ReceivedMessage>) {
        let queue = BoundedAsyncQueue<ReceivedMessage>(capacity: Self.subscriptionCapacity)
        // A stream of a session that is over ends at once.
        guard !context.isInvalidated else {
            queue.finish()
            return (-1, queue)
        }
        let subscription = MessageRouter.Subscription(
            context: context, reliable: reliable, kind: kind, typeName: typeName, queue: queue)
        let (id, backlog) = router.add(subscription, current: self.context)
        // One of a session not begun yet (an application subscribes before it joins) waits for it.
        guard context === self.context else { return (id, queue) }
        _ = await queue.push(contentsOf: backlog)
        releaseUnclaimedWaiters()
        let loop = self.loop
        driver.execute { _, _ in loop.value?.machine.subscriberArrived() }
        return (id, queue)
    }

    /// How many messages wait for a subscription (for tests).
    var unclaimedCount: Int { router.unclaimed.count }

    /// How many messages each subscription holds (for tests).
    func bufferedMessageCounts() -> [Int] {
        router.subscriptions.values.map { $0.queue.count }
    }

    /// Ends a subscription (its consumer went away).
    func unsubscribe(_ id: Int) {
        router.remove(id)?.queue.finish()
    }

    /// Routes a messenger message into `batch` (see ``MessageRouter/place(_:in:into:)``); when the router finds the
    /// unclaimed buffer full, delivers the batch, waits for a subscription or the end of ``unclaimedGracePeriod``,
    /// and routes it again.
    func route(_ bytes: [UInt8], from member: MemberRecord, reliable: Bool, into batch: inout MessageRouter.Batch) async
    {
        guard let context, !context.isInvalidated else { return }
        metrics?.received(bytes: bytes.count, reliable: reliable)
        let source = directory.participant(member)
        guard let envelope = MessageEnvelope(decoding: bytes) else {
            router.noteUndecodable(from: source, reliable: reliable)
            return
        }
        let message = ReceivedMessage(envelope: envelope, source: source, reliable: reliable)
        while !router.place(message, in: context, into: &batch) {
            await deliver(&batch)
            await waitForUnclaimedRoom()
            guard !context.isInvalidated else { return }
        }
    }

    /// Waits until a subscription takes unclaimed messages or ``unclaimedGracePeriod`` ends (then marks the grace
    /// spent). Returns at once when it is already spent.
    func waitForUnclaimedRoom() async {
        guard !router.graceSpent else { return }
        logger.notice(
            "messages arrive faster than the app subscribes to them; holding the session back",
            metadata: ["unclaimed": "\(router.unclaimed.count)"])
        // The grace period is a deadline of the machine (``SessionMachine/waitForSubscriber(now:)``), run by the
        // driver's timer like every other: its end comes back through ``unclaimedGraceEnded()``.
        let loop = self.loop
        _ = try? await driver.perform { _, now in loop.value?.machine.waitForSubscriber(now: now) }
        await withCheckedContinuation { unclaimedWaiters.append($0) }
    }

    func unclaimedGraceEnded() {
        guard !unclaimedWaiters.isEmpty else { return }
        router.graceSpent = true
        releaseUnclaimedWaiters()
    }

    /// Resumes the dispatches waiting for room in the unclaimed buffer (a subscription came, the grace period ended,
    /// or the session ended).
    func releaseUnclaimedWaiters() {
        let waiters = unclaimedWaiters
        unclaimedWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// A subscription could not decode `received` as its type: reported at once (the stream skips it).
    func reportTypeMismatch(_ received: ReceivedMessage) {
        router.noteTypeMismatch(received)
        reportDrops()
    }

    /// Reports the drops of the batch just dispatched on ``GroupSession/messageDrops`` and in the log.
    func reportDrops() {
        for drop in router.takeDrops() {
            context?.messageDrops.append(drop)
            logger.warning("\(drop)", metadata: ["dropped in all": "\(router.droppedCount)"])
        }
    }

    /// Pushes the batch into its subscriptions (waiting while one is full: that is the backpressure) and empties it.
    /// A subscription whose reader went away is removed.
    func deliver(_ batch: inout MessageRouter.Batch) async {
        guard !batch.isEmpty else { return }
        let targets = batch.targets
        batch.targets.removeAll()
        for target in targets where !(await target.queue.push(contentsOf: target.messages)) {
            _ = router.remove(target.id)
        }
    }
}
