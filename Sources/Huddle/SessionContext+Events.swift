import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire
import Logging

extension SessionContext {
    /// What the engine still has to do once a ``SessionEvent`` was applied to the session's observable state.
    enum EventOutcome {
        /// Nothing.
        case none
        /// The session is joined: the joiner resumes once the rest of the output carrying this event is applied.
        case joined
        /// The session is over for this node: fail a pending join with `error`, invalidate the context for `reason`
        /// and tear the session down (after reporting what is still unconfirmed, when `reportingUnconfirmed`).
        case over(HuddleError, InvalidationReason, reportingUnconfirmed: Bool)
        /// `count` messenger messages for `peer` will not be delivered (`nil`: a peer the transport could not name);
        /// `tags` are the receipt numbers they were sent with.
        case undelivered(to: X25519PublicKey?, count: Int, tags: [UInt64], reason: DeliveryFailureReason)
    }

    /// Applies `event` of the session machine to this session's participants, activity and change stream, and says
    /// what is left for the engine (whose I/O this needs none of). Messages are not events here: the engine routes
    /// those on the messenger channels to subscriptions, and those on other channels belong to the machine.
    func apply(
        _ event: SessionEvent, directory: inout ParticipantDirectory, logger: Logger
    ) -> EventOutcome {
        switch event {
        case .joined:
            let found = ActivityCoding.identifier(of: activity.value) ?? "nothing"
            guard found == activityIdentifier else {
                return .over(
                    .activityMismatch(expected: activityIdentifier, found: found),
                    .joinFailed(.activityMismatch(expected: activityIdentifier, found: found)),
                    reportingUnconfirmed: false)
            }
            state.update(.joined)
            return .joined
        case .participantJoined(let member):
            let participant = directory.participant(member)
            journal.saw(participant)
            updateParticipants(participants.value.union([participant]))
            changes.yield(.joined(participant))
            logger.debug("participant joined", metadata: ["participant": "\(participant)"])
        case .participantLeft(let member, let reason):
            let participant = directory.participant(member)
            updateParticipants(participants.value.subtracting([participant]))
            unresponsive.withLockedValue { _ = $0.remove(participant) }
            changes.yield(.left(participant, reason: ParticipantChange.DepartureReason(reason)))
            logger.debug("participant left", metadata: ["participant": "\(participant)", "reason": "\(reason)"])
        case .participantUnresponsive(let member, _):
            let participant = directory.participant(member)
            // Reported once per silence, and only for a participant still active here.
            guard participants.value.contains(participant),
                unresponsive.withLockedValue({ $0.insert(participant).inserted })
            else { break }
            changes.yield(.unresponsive(participant))
            logger.debug("participant unresponsive", metadata: ["participant": "\(participant)"])
        case .participantResponsive(let member):
            let participant = directory.participant(member)
            guard unresponsive.withLockedValue({ $0.remove(participant) != nil }) else { break }
            changes.yield(.responsive(participant))
            logger.debug("participant responsive", metadata: ["participant": "\(participant)"])
        case .pathChanged(let member, let route, let rtt, let relaying):
            let participant = directory.participant(member)
            guard participants.value.contains(participant) else { break }
            paths.yield(
                PathChange(
                    participant: participant, path: PeerPath(route),
                    relayingMember: relaying.map { directory.participant($0) }, smoothedRTT: rtt))
            logger.debug("path changed", metadata: ["participant": "\(participant)", "path": "\(PeerPath(route))"])
        case .activityChanged(let record):
            activity.update(record.payload)
        case .ended(let by):
            // This node ended it (`by` is nil): ``SessionEngine/end(_:)`` waits for the announcement to be
            // acknowledged and tears the session down itself.
            guard let by else { return .none }
            let reason = InvalidationReason.ended(by: Participant(by))
            return .over(.invalidated(reason), reason, reportingUnconfirmed: true)
        case .removed(let by):
            let reason = InvalidationReason.removed(by: by.map { directory.participant($0) })
            return .over(.invalidated(reason), reason, reportingUnconfirmed: true)
        case .joinFailed(let cause):
            let failure = JoinFailure(cause)
            return .over(.joinFailed(failure), .joinFailed(failure), reportingUnconfirmed: false)
        case .joinTimedOut(let after):
            guard case .waiting = state.value else { return .none }
            return .over(
                .joinTimedOut(after), .joinFailed(.noAnswer(within: after)),
                reportingUnconfirmed: false)
        case .undelivered(let peer, _, let messages, let reason):
            let tags = messages.compactMap { SessionEngine.isMessengerChannel($0.channel) ? $0.tag : nil }
            if !tags.isEmpty { return .undelivered(to: peer, count: tags.count, tags: tags, reason: reason) }
        case .unsent(let peer, let channel, let count, let tags, let reason):
            if SessionEngine.isMessengerChannel(channel), count > 0 {
                return .undelivered(to: peer, count: count, tags: tags, reason: reason)
            }
        case .waitingForApproval:
            onWaitingForApproval?()
        case .joinRequested(let record):
            let request = JoinRequest(record)
            pendingJoinRequests.withLockedValue { $0.append(request) }
            joinRequests.append(.asked(request))
        case .joinRequestSettled(let record, let outcome):
            let request = JoinRequest(record)
            pendingJoinRequests.withLockedValue { $0.removeAll { $0 == request } }
            switch outcome {
            case .admitted(let by): joinRequests.append(.admitted(request, by: directory.participant(by)))
            case .denied(let by): joinRequests.append(.denied(request, by: directory.participant(by)))
            case .expired: joinRequests.append(.expired(request))
            }
        case .message, .datagram, .delivered, .subscriberWaitOver, .departed:
            // Messages are routed before they get here; the rest is dropped on the loop or turned into signals
            // there (``LoopSession/drain()``).
            break
        }
        return .none
    }
}
