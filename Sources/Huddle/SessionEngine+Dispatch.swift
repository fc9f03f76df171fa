import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// Turns the cores' output into the public API's state, in order: participants, activity, the session's end,
/// delivery failures, journal updates; messenger messages go to the subscriptions (``route(_:from:reliable:into:)``).
extension SessionEngine {
    /// Dispatches one output in order. Consecutive messenger messages are routed together: each subscription gets
    /// its share in one push (one wake-up of its reader per batch, not per message).
    func dispatch(_ output: LoopSession.Output) async {
        // Signals of an output produced on the loop already went around the dispatcher (``signals(_:)``); those of
        // a local operation's output come here, on the actor.
        receiveSignals(of: output)
        var routed = RoutedMessages()
        for event in output.sessionEvents {
            switch event {
            case .message(let from, let channel, let bytes) where channel == Self.messengerChannel:
                await route(bytes, from: from, reliable: true, into: &routed)
            case .datagram(let from, let channel, let bytes) where channel == Self.messengerChannel:
                await route(bytes, from: from, reliable: false, into: &routed)
            default:
                await deliver(&routed)
                await dispatch(event)
            }
        }
        await deliver(&routed)
        reportDrops()
        if joinCompleted {
            joinCompleted = false
            let waiters = joinWaiters
            joinWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        }
        guard let context, !context.isInvalidated else { return }
        for event in output.journalEvents { context.journal.apply(event) }
    }

    func dispatch(_ event: SessionEvent) async {
        guard let context, !context.isInvalidated else { return }
        switch event {
        case .joined:
            let found = ActivityCoding.identifier(of: context.activity.value) ?? "nothing"
            guard found == context.activityIdentifier else {
                let error = HuddleError.activityMismatch(expected: context.activityIdentifier, found: found)
                failJoin(error)
                context.invalidate(.joinFailed(error.description))
                await teardown(closing: true)
                return
            }
            context.state.update(.joined)
            // The joiner resumes once the rest of this output (the members' arrivals) is applied too.
            joinCompleted = true
        case .participantJoined(let member):
            context.journal.saw(Participant(member))
            var participants = context.participants.value
            participants.update(with: participant(member))
            context.participants.update(participants)
            context.changes.yield(.joined(Participant(member)))
            logger.debug("participant joined", metadata: ["participant": "\(Participant(member))"])
        case .participantLeft(let member, let reason):
            var participants = context.participants.value
            participants.remove(Participant(member))
            context.participants.update(participants)
            context.changes.yield(.left(Participant(member), reason: ParticipantChange.DepartureReason(reason)))
            logger.debug(
                "participant left", metadata: ["participant": "\(Participant(member))", "reason": "\(reason)"])
        case .activityChanged(let record):
            context.activity.update(record.payload)
        case .ended(let by):
            // This node ended it (`by` is nil): ``end()`` waits for the announcement to be acknowledged and tears the
            // session down itself.
            guard by != nil else { return }
            await reportUnconfirmed()
            failJoin(.invalidated(.ended(by: by.map(Participant.init))))
            context.invalidate(.ended(by: by.map(Participant.init)))
            await teardown(closing: true)
        case .joinFailed(let reason):
            failJoin(.joinFailed(reason))
            context.invalidate(.joinFailed(reason))
            await teardown(closing: true)
        case .joinTimedOut(let after):
            guard case .waiting = context.state.value else { return }
            failJoin(HuddleError.joinTimedOut(after))
            context.invalidate(.joinFailed("no member answered within \(after)"))
            await teardown(closing: true)
        case .message, .datagram:
            // Messenger messages are routed by `dispatch(_: LoopSession.Output)` before they get here; messages on
            // other channels belong to the machine.
            break
        case .delivered, .subscriberWaitOver, .departed:
            // Dropped on the loop, or turned into signals there (``LoopSession/drain()``).
            break
        case .undelivered(let peer, _, let messages, let reason):
            let count = messages.count { $0.channel == Self.messengerChannel }
            reportFailure(count: count, to: peer, reason: reason)
        case .unsent(let peer, let channel, let count, let reason):
            guard channel == Self.messengerChannel else { return }
            guard let peer else {
                logger.warning("messages for an unknown peer were not sent", metadata: ["count": "\(count)"])
                return
            }
            reportFailure(count: count, to: peer, reason: reason)
        }
    }

    /// Reports `count` messenger messages for `peer` that will not be delivered, through the session's
    /// ``GroupSession/deliveryFailures`` and the log.
    func reportFailure(count: Int, to peer: X25519PublicKey, reason: DeliveryFailureReason) {
        guard count > 0, let context else { return }
        metrics?.undelivered(count: count, reason: DeliveryFailure.Reason(reason))
        guard let participant = participantCache[peer] else {
            logger.warning(
                "messages for a peer that never was a participant were not delivered", metadata: ["count": "\(count)"])
            return
        }
        let failure = DeliveryFailure(participant: participant, count: count, reason: DeliveryFailure.Reason(reason))
        context.deliveryFailures.yield(failure)
        logger.notice("\(failure)")
    }

    /// The participant `member` is, from the cache when its record still names it the same way.
    func participant(_ member: MemberRecord) -> Participant {
        if let cached = participantCache[member.staticKey], cached.name == member.name,
            cached.signingKey == member.identity.signingKey
        {
            return cached
        }
        let participant = Participant(member)
        participantCache[member.staticKey] = participant
        return participant
    }

    /// Messages on their way to subscriptions, per subscription, in arrival order.
}
