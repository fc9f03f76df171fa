import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// Dispatches the cores' output in order: messenger messages to the subscriptions, every other session event to the
/// session's observable state (``SessionContext/apply(_:directory:logger:)``), journal events to the
/// journal; and does what applying them asks (resume the joiner, tear the session down, report failures).
extension SessionEngine {
    /// Dispatches one output in order. Consecutive messenger messages are routed together: each subscription gets
    /// its share in one push (one wake-up of its reader per batch, not per message).
    func dispatch(_ output: LoopSession.Output) async {
        // Signals of an output produced on the loop already went around the dispatcher (``signals(_:)``); those of
        // a local operation's output come here, on the actor.
        receiveSignals(of: output)
        var batch = MessageRouter.Batch()
        for event in output.sessionEvents {
            switch event {
            case .message(let from, let channel, let bytes) where Self.isMessengerChannel(channel):
                await route(bytes, from: from, reliable: true, into: &batch)
            case .datagram(let from, let channel, let bytes) where channel == Self.messengerChannel:
                await route(bytes, from: from, reliable: false, into: &batch)
            case .message(let from, _, _):
                // A channel this version does not use (a newer peer's): its transport has acknowledged the message,
                // so the application hears of it (messageDrops, undecodable) instead of losing it silently.
                router.noteUndecodable(from: directory.participant(from), reliable: true)
            case .datagram(let from, _, _):
                router.noteUndecodable(from: directory.participant(from), reliable: false)
            default:
                await deliver(&batch)
                await dispatch(event)
            }
        }
        await deliver(&batch)
        reportDrops()
        if joinCompleted {
            joinCompleted = false
            let waiters = joinWaiters
            joinWaiters.removeAll()
            for waiter in waiters { waiter.resume(returning: .success(())) }
        }
        guard let context, !context.isInvalidated else { return }
        for event in output.journalEvents { context.journal.apply(event) }
    }

    func dispatch(_ event: SessionEvent) async {
        guard let context, !context.isInvalidated else { return }
        switch context.apply(event, directory: &directory, logger: logger) {
        case .none:
            break
        case .joined:
            joinCompleted = true
        case .over(let error, let reason, let reportingUnconfirmed):
            if reportingUnconfirmed { reportUnconfirmed() }
            failJoin(error)
            context.invalidate(reason)
            await teardown(closing: true)
        case .undelivered(let peer, let count, let tags, let reason):
            reportFailure(count: count, tags: tags, to: peer, reason: DeliveryFailure.Reason(reason))
        }
    }

    /// Reports `count` messenger messages for `peer`, sent with receipt numbers `tags`, that will not be delivered:
    /// settles their receipts for `peer` and tells ``GroupSession/deliveryFailures`` and the log.
    func reportFailure(count: Int, tags: [UInt64], to peer: X25519PublicKey?, reason: DeliveryFailure.Reason) {
        guard count > 0, let context else { return }
        metrics?.undelivered(count: count, reason: reason)
        guard let peer, let participant = directory.participant(for: peer) else {
            logger.warning(
                "messages for a peer that never was a participant were not delivered", metadata: ["count": "\(count)"])
            return
        }
        let receipts = context.deliveries.failed(tags, for: peer, reason: reason)
        publish(
            DeliveryFailure(participant: participant, count: count, receipts: receipts, reason: reason), in: context)
    }

    /// Tells `failure` on `context`'s ``GroupSession/deliveryFailures`` and in the log.
    func publish(_ failure: DeliveryFailure, in context: SessionContext) {
        context.deliveryFailures.append(failure)
        logger.notice("\(failure)")
    }
}
