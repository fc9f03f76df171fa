extension Connection {
    /// The earliest instant at which ``handleTimeout(now:)`` has work to do, if any.
    public var nextDeadline: Instant? {
        if case .draining(let until) = state { return until }
        if state == .closed { return nil }
        var earliest: Instant? = nil
        func consider(_ instant: Instant?) {
            guard let instant else { return }
            earliest = earliest.map { min($0, instant) } ?? instant
        }
        consider(receivedPackets.ackDeadline)
        consider(sentPackets.deadline(rtt: rtt))
        consider(nextInitiationAt)
        consider(handshakeStartedAt.map { $0 + configuration.handshakeTimeout })
        if current != nil {
            consider(lastReceivedAt + configuration.idleTimeout)
            if isOpen { consider(lastSentAt + configuration.keepaliveInterval) }
            consider(rekeyDeadline)
            consider(current.map { $0.created + configuration.rejectAfterTime })
        }
        consider(previous.map { $0.created + configuration.rejectAfterTime })
        consider(pacerReleaseAt)
        return earliest
    }

    /// When this side should start a rekey: the initiator of the current keypair at ``rekeyAfterTime``; the
    /// responder later, only if the initiator has not (so both rarely initiate at once).
    var rekeyDeadline: Instant? {
        guard let current, initiation == nil, nextInitiationAt == nil, isOpen else { return nil }
        let grace = current.isInitiator ? Duration.zero : configuration.handshakeRetryInterval * 3
        return current.created + configuration.rekeyAfterTime + grace
    }

    /// Runs every timer that is due: loss detection and probes, handshake retries and timeout, keepalive, idle
    /// timeout, rekeying, key expiry and the end of draining.
    public mutating func handleTimeout(now: Instant) {
        if case .draining(let until) = state {
            if now >= until { state = .closed }
            return
        }
        guard state != .closed else { return }

        if let started = handshakeStartedAt, now >= started + configuration.handshakeTimeout {
            let keysStillValid = current.map { now - $0.created < configuration.rejectAfterTime } ?? false
            if !keysStillValid {
                finish(reason: .handshakeTimeout, now: now)
                return
            }
        }
        if current != nil, now >= lastReceivedAt + configuration.idleTimeout {
            finish(reason: .idleTimeout, now: now)
            return
        }
        if let current, now - current.created >= configuration.rejectAfterTime, next == nil {
            // Keys expired without a successful rekey: keep trying until the handshake times out.
            requestHandshake(now: now)
        }
        if let previous, now - previous.created >= configuration.rejectAfterTime {
            retiredIndices.append(previous.localIndex)
            self.previous = nil
        }

        switch sentPackets.onTimeout(now: now, rtt: rtt) {
        case .notDue:
            break
        case .lost(let loss):
            if let latest = loss.latestSentTime { congestion.onCongestionEvent(sentTime: latest, now: now) }
            if loss.persistentCongestion { congestion.onPersistentCongestion(now: now) }
            retransmit(loss.packets)
        case .probe(let count):
            probesOwed = max(probesOwed, count)
        }

        if isOpen, current != nil, now >= lastSentAt + configuration.keepaliveInterval {
            pingPending = true
        }
        if let deadline = rekeyDeadline, now >= deadline {
            requestHandshake(now: now)
        }
        if packetsUnderCurrentKey >= configuration.rekeyAfterPackets {
            requestHandshake(now: now)
        }
    }
}
