import HuddleWire

extension Connection {
    /// Which of a connection's keypairs an incoming packet's receiver index selects.
    enum KeySlot: Sendable {
        case current, previous, next
    }

    /// The keypair slot whose local index is `index`, if any.
    func slot(for index: ReceiverIndex) -> KeySlot? {
        if current?.localIndex == index { return .current }
        if next?.localIndex == index { return .next }
        if previous?.localIndex == index { return .previous }
        return nil
    }

    /// Decrypts `datagram` in place under the keypair in `slot`; returns the plaintext range, or `nil` for a
    /// replayed, expired or forged packet. A first authenticated packet under the responder's unconfirmed keypair
    /// confirms it (TEST-MATRIX H1): it becomes current.
    mutating func open(
        _ datagram: UnsafeMutableRawBufferPointer, header: TransportHeader, slot: KeySlot, now: Instant
    ) -> Range<Int>? {
        let range: Range<Int>?
        switch slot {
        // Only the creation time is read before opening: binding the whole keypair to a local would share its
        // replay window's storage, and recording the packet number would then copy that storage on every packet.
        case .current:
            guard let created = current?.created, now - created < configuration.rejectAfterTime else { return nil }
            range = current!.open(
                datagram, header: header, failureLimit: configuration.maxAuthenticationFailuresPerKeypair)
        case .previous:
            guard let created = previous?.created, now - created < configuration.rejectAfterTime else { return nil }
            range = previous!.open(
                datagram, header: header, failureLimit: configuration.maxAuthenticationFailuresPerKeypair)
            // Never confirmed (still connecting): the initiator completed with our answer to its earlier initiation.
            if range != nil, current == nil { confirmPrevious(now: now) }
        case .next:
            guard next != nil else { return nil }
            range = next!.open(
                datagram, header: header, failureLimit: configuration.maxAuthenticationFailuresPerKeypair)
            if range != nil { confirmNext(now: now) }
        }
        if range == nil { noteExhaustion(slot) }
        return range
    }

    /// Counts, once, a keypair that reached its integrity limit (only on the failure path: the hot path reads
    /// nothing more than before).
    private mutating func noteExhaustion(_ slot: KeySlot) {
        let limit = configuration.maxAuthenticationFailuresPerKeypair
        let newlyExhausted =
            switch slot {
            case .current: current?.noteExhaustion(failureLimit: limit)
            case .previous: previous?.noteExhaustion(failureLimit: limit)
            case .next: next?.noteExhaustion(failureLimit: limit)
            }
        if newlyExhausted == true { statistics.keypairsExhausted += 1 }
    }

    /// Installs the keypair of a handshake this side initiated: confirmed at once (the response proved the peer
    /// has it), so it becomes current and data flows.
    mutating func installInitiatorKeypair(_ keypair: TransportKeypair, now: Instant) {
        retire(previous)
        previous = current
        current = keypair
        retire(next)
        next = nil
        completeHandshake(now: now)
        // The responder may not send until it sees a packet under the new keys; make sure one goes out now.
        if !hasSomethingToSend { pingPending = true }
    }

    /// Installs the keypair of a handshake the peer initiated. It stays unconfirmed (``next``), and nothing is sent
    /// under it, until the initiator's first packet arrives under it (TEST-MATRIX H2).
    mutating func installResponderKeypair(_ keypair: TransportKeypair, now: Instant) {
        if current == nil, let earlier = next {
            // Still connecting, and we answered an earlier initiation of the peer's already: the peer accepts a
            // response to either (a response to the initiation its newer one replaced still completes its
            // handshake), so both stay usable until a packet under one of them confirms it (see ``open``).
            retire(previous)
            previous = earlier
        } else {
            retire(next)
        }
        next = keypair
        // A simultaneous initiation of ours lost the tie-break (or is superseded): drop it.
        if let initiation {
            retiredIndices.append(initiation.senderIndex)
            self.initiation = nil
        }
        retireSuperseded()
        nextInitiationAt = nil
        handshakeStartedAt = nil
        initiationsSent = 0
    }

    /// The unconfirmed answer to the peer's earlier initiation is the one it completed with: it becomes current and
    /// the later answer is retired.
    private mutating func confirmPrevious(now: Instant) {
        answeredInitiation = nil
        current = previous
        previous = nil
        retire(next)
        next = nil
        completeHandshake(now: now)
    }

    private mutating func confirmNext(now: Instant) {
        answeredInitiation = nil
        retire(previous)
        previous = current
        current = next
        next = nil
        completeHandshake(now: now)
    }

    private mutating func completeHandshake(now: Instant) {
        // Retire the indices of the initiations still held (the pending one, the superseded one), except the one the
        // new keypair was made from: a response to the superseded initiation completes the handshake under that
        // initiation's index, and retiring it would leave every packet the peer sends unroutable.
        let kept = current?.localIndex
        for index in [initiation?.senderIndex, superseded?.initiation.senderIndex].compactMap({ $0 })
        where index != kept {
            retiredIndices.append(index)
        }
        initiation = nil
        superseded = nil
        initiationsSent = 0
        handshakeStartedAt = nil
        nextInitiationAt = nil
        packetsUnderCurrentKey = 0
        statistics.handshakes += 1
        lastReceivedAt = now
        idleTimerStartedAt = now
        if state == .connecting {
            state = .established
            events.append(.established)
            // A connection established on a direct route has just become a direct one (§7.12): the peer learns the
            // address its packets arrive from, as after a move from the relay.
            if case .direct = paths.current { observedAddressOwed = true }
            // Through TURN, the peer's address as the server saw it may also be reachable straight (a peer on the
            // LAN or with a public address): a path challenge tries it, and an answer moves the connection off the
            // TURN server as hole punching would.
            if case .turn(_, let peer) = paths.current { paths.challenge(.direct(peer), force: true, now: now) }
        }
    }

    private mutating func retire(_ keypair: TransportKeypair?) {
        if let keypair { retiredIndices.append(keypair.localIndex) }
    }

    /// Records a (re)transmitted initiation and schedules the next retry `retryDelay` from now.
    mutating func initiationSent(
        _ initiation: HandshakeMessages.Initiation, authenticator: MacAuthenticator, retryDelay: Duration, now: Instant
    ) {
        if let old = self.initiation, old.senderIndex != initiation.senderIndex {
            retireSuperseded()
            if let oldAuthenticator = initiationAuthenticator {
                superseded = (old, oldAuthenticator)
            } else {
                retiredIndices.append(old.senderIndex)
            }
        }
        self.initiation = initiation
        initiationAuthenticator = authenticator
        initiationResends = 0
        initiationCredentialsChanged = false
        if handshakeStartedAt == nil { handshakeStartedAt = now }
        initiationsSent += 1
        nextInitiationAt = now + retryDelay
    }

    /// Forgets the superseded initiation (its index is no longer answered).
    mutating func retireSuperseded() {
        if let older = superseded { retiredIndices.append(older.initiation.senderIndex) }
        superseded = nil
    }

    /// The pending or the superseded initiation that `index` names, with the authenticator for its response.
    func initiation(
        answeredAt index: ReceiverIndex
    ) -> (
        initiation: HandshakeMessages.Initiation, authenticator: MacAuthenticator
    )? {
        if let initiation, initiation.senderIndex == index, let initiationAuthenticator {
            return (initiation, initiationAuthenticator)
        }
        if let superseded, superseded.initiation.senderIndex == index { return superseded }
        return nil
    }

    /// Records that the pending initiation's bytes went out again; the next retry is due `retryDelay` from now.
    mutating func initiationResent(retryDelay: Duration, now: Instant) {
        initiationResends += 1
        initiationsSent += 1
        nextInitiationAt = now + retryDelay
    }

    /// Whether the next retry may send the pending initiation's bytes again rather than a new initiation.
    var canResendInitiation: Bool {
        initiation != nil && !initiationCredentialsChanged && initiationResends < ProtocolLimits.initiationResends
    }

    /// The wait before retrying the initiation just sent, without jitter: the initial retry interval, doubled for
    /// every earlier initiation of this handshake, at most the configured retry interval.
    var initiationRetryDelay: Duration {
        var delay = configuration.handshakeInitialRetryInterval
        for _ in 0..<min(initiationsSent, 16) where delay < configuration.handshakeRetryInterval { delay = delay * 2 }
        return min(delay, configuration.handshakeRetryInterval)
    }

    /// Whether the endpoint should send a (new) initiation now.
    func wantsInitiation(now: Instant) -> Bool {
        guard isOpen || state == .connecting, let due = nextInitiationAt else { return false }
        return due <= now
    }

    /// Moves a pending initiation's retry to the next timer firing (its credentials changed).
    mutating func retryInitiationSoon() {
        guard initiation != nil, let due = nextInitiationAt else { return }
        initiationCredentialsChanged = true
        nextInitiationAt = min(due, handshakeStartedAt ?? due)
    }

    /// Sends the pending initiation again at `now` (a relay just became able to carry it), with no new credentials.
    mutating func resendInitiationSoon(now: Instant) {
        guard initiation != nil, let due = nextInitiationAt else { return }
        nextInitiationAt = min(due, now)
    }

    /// Asks for a handshake as soon as possible (first connect, rekey).
    mutating func requestHandshake(now: Instant) {
        guard nextInitiationAt == nil, initiation == nil else { return }
        nextInitiationAt = now
    }
}
