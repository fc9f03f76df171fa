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
        if state == .established { consider(paths.nextChallengeDeadline) }
        if paths.amplificationBlocks(datagramSize: configuration.maxDatagramSize) {
            // Nothing but probes can go out until the peer answers on this route: waking for an ACK, a loss probe or
            // the pacer would find nothing to send, again and again.
            consider(idleDeadline)
            return earliest
        }
        consider(receivedPackets.ackDeadline)
        consider(sentPackets.deadline(rtt: rtt))
        consider(nextInitiationAt)
        // No closures that capture `self` here (`optional.map { ... configuration ... }`): this runs after every
        // input, and such a closure made the compiler copy the whole connection (retaining every buffer in it).
        if let started = handshakeStartedAt { consider(started + configuration.handshakeTimeout) }
        consider(unconfirmedResponderDeadline)
        if let created = current?.created {
            consider(idleDeadline)
            if keepaliveArmed { consider(keepaliveDeadline) }
            consider(unresponsiveDeadline)
            consider(rekeyDeadline)
            consider(created + configuration.rejectAfterTime)
        }
        if let created = previous?.created { consider(created + configuration.rejectAfterTime) }
        consider(pacerReleaseAt)
        return earliest
    }

    /// When a connection this side only answered gives up waiting for the initiator to confirm the keys: a responder
    /// that never hears back must not keep its state (or an admission slot) forever. A retried initiation installs
    /// a newer keypair and so moves the deadline.
    var unconfirmedResponderDeadline: Instant? {
        guard current == nil, handshakeStartedAt == nil, let created = next?.created else { return nil }
        return created + configuration.handshakeTimeout
    }

    /// Whether a keepalive PING is due after a quiet period: only when nothing ack-eliciting is in flight (then
    /// loss recovery already probes the peer) and no PING is already waiting.
    var keepaliveArmed: Bool {
        isOpen && current != nil && !pingPending && sentPackets.ackElicitingInFlight == 0
    }

    /// When a keepalive PING goes out if nothing arrives before: ``ConnectionConfiguration/keepaliveInterval`` after
    /// the last packet from the peer, half as long again for the responder of the current keys (so on a quiet
    /// connection only the initiator pings, and the acknowledgement keeps both sides hearing each other).
    var keepaliveDeadline: Instant { lastReceivedAt + keepaliveWait }

    /// How long this side waits for the peer before it sends a keepalive (see ``keepaliveDeadline``).
    private var keepaliveWait: Duration {
        let interval = configuration.keepaliveInterval
        return current?.isInitiator == false ? interval + interval / 2 : interval
    }

    /// When the peer counts as unresponsive (``ConnectionEvent/unresponsive(lastHeard:)``), if not reported yet:
    /// ``ConnectionConfiguration/unresponsiveAfter`` after it was last heard, and never before this side's keepalive
    /// and a loss probe of it had two probe timeouts to be answered, so a live peer on a slow path (a round trip near
    /// the keepalive interval) is not reported between its answers.
    var unresponsiveDeadline: Instant? {
        guard state == .established, !reportedUnresponsive else { return nil }
        return Swift.max(lastReceivedAt, silenceCountedFrom ?? lastReceivedAt) + unresponsiveSilence
    }

    /// How long a silence lasts before the peer counts as unresponsive (see ``unresponsiveDeadline``).
    private var unresponsiveSilence: Duration {
        Swift.max(configuration.unresponsiveAfter, keepaliveWait + rtt.probeTimeout * 2)
    }

    /// When this side should start a rekey: the initiator of the current keypair at ``rekeyAfterTime``; the
    /// responder later, only if the initiator has not (so both rarely initiate at once).
    var rekeyDeadline: Instant? {
        guard let created = current?.created, let isInitiator = current?.isInitiator, initiation == nil,
            nextInitiationAt == nil, next == nil, isOpen
        else { return nil }
        // A keypair at its integrity limit accepts nothing more: either side rekeys at once.
        if current?.isExhausted(failureLimit: configuration.maxAuthenticationFailuresPerKeypair) == true {
            return created
        }
        let grace = isInitiator ? Duration.zero : configuration.handshakeRetryInterval * 3
        return created + configuration.rekeyAfterTime + grace
    }

    /// Runs every timer that is due: loss detection and probes, handshake retries and timeout, keepalive, idle
    /// timeout, rekeying, key expiry and the end of draining.
    public mutating func handleTimeout(now: Instant) {
        if case .draining(let until) = state {
            if now >= until { state = .closed }
            return
        }
        guard state != .closed else { return }
        noteServiced(now: now)

        if let started = handshakeStartedAt, now >= started + configuration.handshakeTimeout {
            let keysStillValid = current.map { now - $0.created < configuration.rejectAfterTime } ?? false
            if !keysStillValid {
                finish(reason: .handshakeTimeout, now: now)
                return
            }
        }
        if let deadline = unconfirmedResponderDeadline, now >= deadline {
            finish(reason: .handshakeTimeout, now: now)
            return
        }
        if current != nil, now >= idleDeadline {
            finish(reason: .idleTimeout, now: now)
            return
        }
        if let current, now - current.created >= configuration.rejectAfterTime {
            // Keys expired without a successful rekey: they are never used again. Keep trying to handshake (unless
            // a new keypair already waits for the peer's confirmation) until the handshake times out.
            retiredIndices.append(current.localIndex)
            self.current = nil
            if next == nil { requestHandshake(now: now) }
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
            retransmit(loss.packets, now: now)
        case .probe(let count):
            probesOwed = max(probesOwed, count)
            // The probes carry the oldest unacknowledged message data again (RFC 9002 §6.2.4): if that packet was
            // lost, its data arrives half a round trip after the probe timeout, instead of a round trip and a half
            // later (a PING's acknowledgement would first have to show the loss). Nothing is counted lost or slowed;
            // an acknowledgement of the original still arriving makes the copy moot.
            if let oldest = sentPackets.oldestOutstandingAckEliciting {
                for index in 0..<oldest.record.fragmentCount {
                    let record = oldest.record.fragment(at: index)
                    if let position = sendChannels.position(of: record.channel) {
                        sendChannels.channels[position].onLost(record)
                    }
                }
            }
            // Three probe timeouts in a row on a direct route that was reached through a relay: the direct path
            // (a NAT mapping, usually) stopped working, so the relay carries the probes and everything after them.
            // And a quiet spell of three full probe timeouts (acknowledgement delay included): probes of packets
            // acknowledged at once start from about a round trip, and a peer descheduled for a few milliseconds
            // must not move a working connection onto the relay.
            if sentPackets.probeTimeoutCount >= ProtocolLimits.probeTimeoutsBeforeRelayFallback,
                now - lastReceivedAt >= rtt.probeTimeout * ProtocolLimits.probeTimeoutsBeforeRelayFallback
            {
                fallBackToRelayIfQuiet(now: now)
            }
        }

        if keepaliveArmed, now >= keepaliveDeadline {
            pingPending = true
        }
        if let deadline = unresponsiveDeadline, now >= deadline {
            if now - deadline > ProtocolLimits.stallTolerance {
                // Checked this late, this process was stalled (suspended, descheduled): the peer's packets may be
                // waiting in the socket. A keepalive asks it to answer, and it is given a short grace to do so
                // (reading what waits takes one pass of the event loop; an answer one round trip).
                silenceCountedFrom = now + ProtocolLimits.unresponsiveGraceAfterStall - unresponsiveSilence
                if sentPackets.ackElicitingInFlight == 0 { pingPending = true }
            } else {
                reportedUnresponsive = true
                events.append(.unresponsive(lastHeard: lastReceivedAt))
            }
        }
        if let deadline = rekeyDeadline, now >= deadline {
            requestHandshake(now: now)
        }
        if packetsUnderCurrentKey >= configuration.rekeyAfterPackets {
            requestHandshake(now: now)
        }
    }
}

extension Connection {
    /// Every timer input and its deadline, for diagnosing a stuck connection.
    public var timerReport: String {
        func show(_ instant: Instant?) -> String { instant.map { "\($0)" } ?? "-" }
        return [
            "state \(state)", "ack \(show(receivedPackets.ackDeadline)) pending \(receivedPackets.isAckPending)",
            "loss/pto \(show(sentPackets.deadline(rtt: rtt))) probes \(probesOwed)",
            "initiation \(show(nextInitiationAt)) started \(show(handshakeStartedAt)) pending \(initiation != nil)",
            "current \(show(current?.created)) next \(show(next?.created)) previous \(show(previous?.created))",
            "rekey \(show(rekeyDeadline)) idle \(show(current != nil ? idleDeadline : nil))",
            "keepalive \(show(keepaliveDeadline)) unresponsive \(show(unresponsiveDeadline)) pacer \(show(pacerReleaseAt))",
            "inflight \(sentPackets.bytesInFlight)/\(congestion.congestionWindow) something \(hasSomethingToSend)",
            "credit \(sendCredit) ping \(pingPending) maxData \(maxDataPending)",
            "rtt \(rtt.smoothed)/\(rtt.minimum) lost \(statistics.packetsLost) spurious \(statistics.spuriousLosses)"
                + " undone \(statistics.congestionEventsUndone)/\(sentPackets.recoveryPeriodCount) thresholds \(sentPackets.packetThreshold) packets"
                + " \(sentPackets.timeThresholdEighths)/8 RTT",
        ].joined(separator: "; ")
    }
}
