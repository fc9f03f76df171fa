import HuddleCrypto
import HuddleWire

extension Endpoint {
    /// Processes one received datagram (decrypting in place). Never throws and never answers unauthenticated input:
    /// everything that fails a check is dropped and counted in ``statistics``.
    public mutating func handle(datagram: UnsafeMutableRawBufferPointer, from source: NetworkAddress, now: Instant) {
        statistics.datagramsReceived += 1
        if !turnClients.isEmpty,
            let index = turnClients.firstIndex(where: { $0.server.address == source && $0.server.transport == .udp })
        {
            handleTurnDatagram(datagram, from: index, now: now)
            return
        }
        if !portMappingClients.isEmpty, let index = portMappingClients.firstIndex(where: { $0.gateway == source }) {
            handlePortMappingDatagram(UnsafeRawBufferPointer(datagram), from: index, now: now)
            return
        }
        if !stunClients.isEmpty, let index = stunClients.firstIndex(where: { $0.server == source }) {
            let dropped = stunClients[index].datagramsDropped
            if let mapped = stunClients[index].handle(UnsafeRawBufferPointer(datagram)) {
                learnReflexiveAddress(mapped)
            }
            statistics.turnDatagramsDropped += stunClients[index].datagramsDropped - dropped
            return
        }
        guard let type = try? PacketClassifier.classify(UnsafeRawBufferPointer(datagram)) else {
            statistics.malformedDropped += 1
            return
        }
        switch type {
        case .relayChallenge, .relayRegistered, .relayDeliver:
            handleRelayPacket(datagram, type: type, from: source, now: now)
        case .relayRegister, .relaySend:
            // Packets only a relay takes: this endpoint's, when it relays for its session's members.
            handleRelayRequest(datagram, from: source, now: now)
        default:
            dispatch(datagram, type: type, from: .direct(source), now: now)
        }
    }

    /// Handles a Huddle packet (types 1-4) that arrived on `route`: straight from its sender, or unwrapped from a
    /// relay's RELAY_DELIVER.
    mutating func dispatch(
        _ datagram: UnsafeMutableRawBufferPointer, type: PacketType? = nil, from route: Route, now: Instant
    ) {
        guard let type = type ?? (try? PacketClassifier.classify(UnsafeRawBufferPointer(datagram))) else {
            statistics.malformedDropped += 1
            return
        }
        switch type {
        case .transportData: handleTransport(datagram, from: route, now: now)
        case .handshakeInitiation: handleInitiation(Array(datagram), from: route, now: now)
        case .handshakeResponse: handleResponse(Array(datagram), from: route, now: now)
        case .cookieReply: handleCookieReply(Array(datagram), now: now)
        case .handshakeRefusal: handleRefusal(Array(datagram), now: now)
        case .relayRegister, .relayChallenge, .relayRegistered, .relaySend, .relayDeliver:
            // A relay packet inside a relay packet.
            statistics.malformedDropped += 1
        }
    }

    /// ``handle(datagram:from:now:)`` for an array (copies; for tests and the simulator).
    public mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        var copy = datagram
        copy.withUnsafeMutableBytes { handle(datagram: $0, from: source, now: now) }
    }

    // MARK: - Transport

    private mutating func handleTransport(
        _ datagram: UnsafeMutableRawBufferPointer, from route: Route, now: Instant
    ) {
        guard let header = try? TransportHeader(decoding: UnsafeRawBufferPointer(datagram)) else {
            statistics.malformedDropped += 1
            return
        }
        guard let id = connectionByIndex[header.receiverIndex], let slot = connections.slot(of: id),
            let keySlot = connections.withConnection(in: slot, nominating: [], { $0.slot(for: header.receiverIndex) })
        else {
            statistics.unknownIndexDropped += 1
            return
        }
        // Through a relay, only the connection's own peer: the relay vouches for the sender's key.
        if case .relayed(_, let sender) = route,
            connections.withConnection(in: slot, nominating: [], { $0.peer != sender })
        {
            statistics.transportRejected += 1
            return
        }
        // What fails to open changes nothing the endpoint's polls look at (garbage costs no polling); what opens is
        // handled next, which makes the connection a candidate for everything.
        let opened = connections.withConnection(in: slot, nominating: []) {
            $0.open(datagram, header: header, slot: keySlot, now: now)
        }
        guard let range = opened else {
            statistics.transportRejected += 1
            return
        }
        // The connection decides whether the peer moved (migration with path validation, docs/PROTOCOL.md 7.12).
        connections.withConnection(in: slot) {
            $0.handlePayload(
                UnsafeRawBufferPointer(rebasing: datagram[range]), packetNumber: header.packetNumber.rawValue,
                flags: header.flags, from: route, datagramLength: datagram.count, now: now)
        }
        collectRetiredIndices(id, slot: slot)
    }

    // MARK: - Handshake: responder side

    /// An initiation that passed the checks before any Diffie-Hellman: its `mac1` verified under `incoming` (a
    /// member's key, or the admission's when `admission` is set) and, under load, its cookie.
    private struct CheckedInitiation {
        let layout: HandshakeInitiation
        let incoming: MacAuthenticator
        let admission: AdmissionID?
        /// Whether it carried a valid `mac2`, proving its source address (only asked under load).
        let provedAddress: Bool
    }

    /// Answers an initiation, in the order the checks cost: `mac1` and the load check, the Noise message, the
    /// initiator's authorisation, replays and floods, what becomes of the peer's existing connection, then the
    /// response. Each step drops what fails it and counts why.
    private mutating func handleInitiation(_ bytes: [UInt8], from source: Route, now: Instant) {
        guard let checked = checkBeforeDiffieHellman(bytes, from: source, now: now),
            let received = openInitiation(bytes, checked, from: source),
            let (peer, readmitted) = authorizeInitiator(received, bytes, checked, now: now),
            !isReplayOrFlood(received, bytes, from: source, now: now),
            settleExistingConnection(for: received, readmitted: readmitted, now: now)
        else { return }
        respond(to: received, bytes, from: peer, at: source, now: now)
    }

    /// The checks that cost no Diffie-Hellman: a `mac1` under a member's or an admission's key (strangers cost one
    /// keyed hash per distinct mac secret, H4, D1), the layout, and under load a cookie (or a cookie reply instead).
    private mutating func checkBeforeDiffieHellman(
        _ bytes: [UInt8], from source: Route, now: Instant
    ) -> CheckedInitiation? {
        // mac1 first: one keyed hash per distinct mac secret (all members share one, each open admission has its
        // own), and no Diffie-Hellman for strangers (H4, D1).
        let memberKey = peerMacKeyAuthenticating(bytes)
        let admission = memberKey == nil ? admissionAuthenticating(bytes) : nil
        guard let incoming = memberKey ?? admission.flatMap({ admissions[$0]?.incoming }) else {
            statistics.mac1Failures += 1
            return nil
        }
        guard let layout = try? HandshakeInitiation(decoding: bytes) else {
            statistics.malformedDropped += 1
            return nil
        }
        // Under load only initiations that prove their source address (a valid mac2) go on; those pending peers are
        // not displaced by ones that did not (see ``admit(_:under:proved:now:)``).
        guard isUnderLoad(now: now) else {
            return CheckedInitiation(layout: layout, incoming: incoming, admission: admission, provedAddress: false)
        }
        let cookie = cookieJar.currentCookie(forAddress: source.canonicalBytes, now: now)
        guard let cookie,
            MacAuthenticator.hasValidMac2(bytes, mac2Offset: HandshakeInitiation.mac2Offset, cookie: cookie)
        else {
            sendCookieReply(
                answering: bytes, senderIndex: layout.senderIndex, sealedWith: incoming, to: source, now: now)
            return nil
        }
        // A proved address is still one address: it gets its share of Diffie-Hellman, not all of it.
        guard initiationLimiter.allow(source, now: now) else {
            statistics.initiationsRateLimited += 1
            return nil
        }
        return CheckedInitiation(layout: layout, incoming: incoming, admission: admission, provedAddress: true)
    }

    /// The Noise message opened (the Diffie-Hellman work), or `nil` after counting the failure and, for another
    /// protocol revision, sending HANDSHAKE_REFUSED.
    private mutating func openInitiation(
        _ bytes: [UInt8], _ checked: CheckedInitiation, from source: Route
    ) -> HandshakeMessages.ReceivedInitiation? {
        statistics.initiationsProcessed += 1
        do {
            return try HandshakeMessages.readInitiation(
                checked.layout, localStatic: configuration.identity.agreementKey, prologue: configuration.prologue,
                using: &random)
        } catch {
            statistics.handshakeFailures += 1
            // Its mac1 proves the initiator holds credentials this node accepts, yet its Noise message does not
            // decrypt: it speaks another protocol revision (the prologue is hashed into the key that seals its static
            // key). Say which one this node speaks, under those same credentials, so it can fail at once with both
            // names instead of retrying for 90 s (docs/PROTOCOL.md 7.6). One that decrypts but carries an invalid
            // timestamp speaks this revision badly: it gets silence.
            if case CryptoError.authenticationFailed = error {
                sendRefusal(
                    answering: bytes, senderIndex: checked.layout.senderIndex, sealedWith: checked.incoming,
                    to: source)
            }
            return nil
        }
    }

    /// The initiator's peer entry, if it may connect, and whether it was admitted again (a known key that came under
    /// an admission's credentials).
    private mutating func authorizeInitiator(
        _ received: HandshakeMessages.ReceivedInitiation, _ bytes: [UInt8], _ checked: CheckedInitiation,
        now: Instant
    ) -> (Peer, readmitted: Bool)? {
        // Only authorised peers, and only with their own mac secret (H3); a stranger only under an admission. A known
        // key under an admission is a member that restarted and lost its session state, or one that switched
        // credentials (the handshake proves the key): it is admitted again, and its connection is judged later.
        let known = peers[received.initiatorStatic]
        var readmitted = false
        if known?.incoming.hasValidMac1(bytes, mac1Offset: HandshakeInitiation.mac1Offset) != true,
            let admission = checked.admission ?? admissionAuthenticating(bytes)
        {
            guard admit(received.initiatorStatic, under: admission, proved: checked.provedAddress, now: now) else {
                return nil
            }
            readmitted = known != nil
        }
        guard let peer = peers[received.initiatorStatic],
            peer.incoming.hasValidMac1(bytes, mac1Offset: HandshakeInitiation.mac1Offset)
        else {
            statistics.unknownPeerDropped += 1
            return nil
        }
        return (peer, readmitted)
    }

    /// Whether the initiation replays one already accepted (an exact duplicate of the last one answered is answered
    /// again, with the same response), carries an old timestamp, or comes too soon after the last accepted one.
    /// Checked against the peer's latest connection, even one that is closing or draining.
    private mutating func isReplayOrFlood(
        _ received: HandshakeMessages.ReceivedInitiation, _ bytes: [UInt8], from source: Route, now: Instant
    ) -> Bool {
        let latest = connectionByPeer[received.initiatorStatic].flatMap { connections[$0] }
        // An exact duplicate of the initiation we last answered: the initiator resent it (our response was lost or
        // is still on its way). Answer it again with the same response; never a second handshake.
        if let answered = latest?.answeredInitiation, answered.initiation == bytes {
            statistics.duplicateInitiationsAnswered += 1
            outbox.append((source, answered.response))
            return true
        }
        if let last = latest?.lastAcceptedTimestamp, received.timestamp <= last {
            statistics.staleTimestampDropped += 1
            return true
        }
        if let last = latest?.lastInitiationAcceptedAt, now - last < configuration.minimumInitiationInterval {
            statistics.floodDropped += 1
            return true
        }
        return false
    }

    /// Decides what becomes of the peer's live connection, if any: continued by a rekey, closed (a readmitted peer
    /// that restarted) or superseded (the peer started over). Returns `false` when the initiation must be dropped: a
    /// rekey of a connection this node no longer has.
    private mutating func settleExistingConnection(
        for received: HandshakeMessages.ReceivedInitiation, readmitted: Bool, now: Instant
    ) -> Bool {
        // A peer admitted again (its key was known, but its initiation came under an admission's credentials) has
        // usually restarted: its old connection cannot be continued (message sequences start over), so it is closed
        // and a fresh one answers. Two exceptions, where the peer only switched credentials (a joiner welcomed
        // elsewhere dials with the session's credentials a member that has not heard of it yet): a rekey of the live
        // connection (only the holder of its keys can name one), and a connection that only answered an initiation
        // of the peer's, still unconfirmed (no packet was exchanged on it, and we are not initiating on it): the peer
        // may complete with our answer to either initiation.
        if readmitted, let old = liveConnection(to: received.initiatorStatic) {
            let continues = connections.withConnection(in: connections.slot(of: old)!) { connection in
                received.resumption.map { connection.slot(for: $0) != nil }
                    ?? (connection.current == nil && connection.next != nil && connection.initiation == nil
                        && connection.nextPacketNumber == 0)
            }
            if !continues { close(old, code: .noError, reason: "peer restarted", now: now) }
        }
        // Continue or start over. A rekey names one of our keypairs of the connection it continues; anything else
        // continues a connection we no longer have, and installing its keys here would mix the peer's old message
        // sequences with our new ones: drop it (the peer's connection times out and it then opens a new one). A new
        // connection from a peer whose connection here was established means the peer started over (it restarted,
        // or its side ended): ours is superseded, so both sides' message sequences start over together.
        guard let live = liveConnection(to: received.initiatorStatic) else {
            guard received.resumption == nil else {
                statistics.staleResumptionsDropped += 1
                return false
            }
            return true
        }
        let winsSimultaneousOpen = staticKey.bytes.lexicographicallyPrecedes(received.initiatorStatic.bytes)
        let known = connections.withConnection(in: connections.slot(of: live)!) { connection in
            (
                resumable: received.resumption.map { connection.slot(for: $0) != nil } ?? false,
                established: connection.state == .established,
                // Our initiation won a simultaneous open moments ago: the peer answered it and dropped its own, but
                // a copy of that one (sent through a relay or a TURN server while the direct one crossed ours) can
                // still arrive. Superseding for it would end the connection both sides just made.
                crossing: winsSimultaneousOpen
                    && connection.current.map {
                        $0.isInitiator && now - $0.created < ProtocolLimits.crossingInitiationWindow
                    } ?? false
            )
        }
        if received.resumption != nil, !known.resumable {
            statistics.staleResumptionsDropped += 1
            return false
        }
        if received.resumption == nil, known.established, known.crossing {
            statistics.simultaneousInitiationsDropped += 1
            return false
        }
        if received.resumption == nil, known.established {
            statistics.connectionsSuperseded += 1
            connections[live]!.supersede(now: now)
            collectRetiredIndices(live)
        }
        return true
    }

    /// Answers the initiation on the peer's live connection or a new one, unless this side wins a simultaneous open.
    private mutating func respond(
        to received: HandshakeMessages.ReceivedInitiation, _ bytes: [UInt8], from peer: Peer, at source: Route,
        now: Instant
    ) {
        let id =
            liveConnection(to: received.initiatorStatic)
            ?? makeConnection(peer: received.initiatorStatic, route: source, now: now)
        var connection = connections[id]!
        // Simultaneous open (H9): the side with the smaller static key keeps its own initiation. Its initiation may
        // have been dropped by a peer that did not know it yet (it learned of us since: it just initiated), or sent
        // where the peer cannot be reached, so the same bytes go out once more, to where the peer's initiation came
        // from: the address its NAT opened toward us (a symmetric NAT's mapping toward another member, which is what
        // a roster names, drops them). Answered if they were lost, a harmless stale replay if they were not. One
        // resend per received initiation keeps this as rate-limited as the peer's own retries.
        if let pending = connection.initiation,
            staticKey.bytes.lexicographicallyPrecedes(received.initiatorStatic.bytes)
        {
            statistics.simultaneousInitiationsDropped += 1
            outbox.append((source, pending.datagram))
            return
        }
        let localIndex = allocateIndex()
        guard
            let (keys, response) = try? HandshakeMessages.makeResponse(
                to: received, presharedKey: peer.credentials.presharedKey, senderIndex: localIndex,
                authenticator: peer.outgoing, cookie: nil),
            let keypair = try? TransportKeypair(
                keys: keys, localIndex: localIndex, remoteIndex: received.senderIndex, isInitiator: false, created: now)
        else {
            statistics.handshakeFailures += 1
            return
        }
        connection.lastAcceptedTimestamp = received.timestamp
        connection.lastInitiationAcceptedAt = now
        connection.adoptHandshakeRoute(source)
        connection.installResponderKeypair(keypair, now: now)
        connection.answeredInitiation = (bytes, response)
        connections[id] = connection
        connectionByIndex[localIndex] = id
        collectRetiredIndices(id)
        outbox.append((source, response))
        statistics.responsesSent += 1
    }

    /// Counts initiations per second; above the configured rate the endpoint demands cookies.
    private mutating func isUnderLoad(now: Instant) -> Bool {
        if now - loadWindowStart >= .seconds(1) {
            loadWindowStart = now
            initiationsInWindow = 0
        }
        initiationsInWindow += 1
        return initiationsInWindow > configuration.initiationsPerSecondBeforeCookies
    }

    /// Answers an initiation under load with a cookie, sealed with `incoming`: the `mac1` key the initiator used, a
    /// known peer's or an open admission's (a joiner with a ticket must get a cookie too, or a flood above the load
    /// threshold would stop every join).
    private mutating func sendCookieReply(
        answering bytes: [UInt8], senderIndex: ReceiverIndex, sealedWith incoming: MacAuthenticator, to source: Route,
        now: Instant
    ) {
        let cookie = cookieJar.cookie(forAddress: source.canonicalBytes, now: now, using: &random)
        let nonce = random.bytes(count: XChaChaPoly.nonceLength)
        let mac1 = bytes[HandshakeInitiation.mac1Offset..<(HandshakeInitiation.mac1Offset + MacAuthenticator.macLength)]
        guard let sealed = try? incoming.sealCookie(cookie, nonce: nonce, answeringMac1: mac1),
            let reply = try? CookieReply(receiverIndex: senderIndex, nonce: nonce, encryptedCookie: sealed).encoded()
        else { return }
        outbox.append((source, reply))
        statistics.cookieRepliesSent += 1
    }

    /// Refuses an initiation of another protocol revision with a ``HandshakeRefusal`` naming this endpoint's
    /// prologue, sealed with `incoming`'s cookie key (the credentials whose `mac1` the initiation carried). An
    /// endpoint whose prologue is longer than ``HandshakeRefusal/maxPrologueLength`` stays silent.
    private mutating func sendRefusal(
        answering bytes: [UInt8], senderIndex: ReceiverIndex, sealedWith incoming: MacAuthenticator, to source: Route
    ) {
        guard let plaintext = HandshakeRefusal.plaintext(naming: configuration.prologue) else { return }
        let nonce = random.bytes(count: XChaChaPoly.nonceLength)
        let mac1 = bytes[HandshakeInitiation.mac1Offset..<(HandshakeInitiation.mac1Offset + MacAuthenticator.macLength)]
        guard
            let sealed = try? incoming.sealRefusal(
                plaintext, nonce: nonce, header: HandshakeRefusal.header(receiverIndex: senderIndex),
                answeringMac1: mac1),
            let refusal = try? HandshakeRefusal(receiverIndex: senderIndex, nonce: nonce, encryptedPrologue: sealed)
                .encoded()
        else { return }
        outbox.append((source, refusal))
        statistics.refusalsSent += 1
    }

    // MARK: - Handshake: initiator side

    private mutating func handleResponse(_ bytes: [UInt8], from source: Route, now: Instant) {
        // The pending initiation, or the one it replaced (its response may already be on its way), each checked with
        // the credentials it was made with.
        guard let layout = try? HandshakeResponse(decoding: bytes),
            let id = connectionByIndex[layout.receiverIndex], let connection = connections[id],
            let (initiation, authenticator) = connection.initiation(answeredAt: layout.receiverIndex),
            peers[initiation.remoteStatic] != nil
        else {
            statistics.responsesDropped += 1
            return
        }
        guard verifyMac1(bytes, with: authenticator, at: HandshakeResponse.mac1Offset) else {
            statistics.mac1Failures += 1
            return
        }
        guard let keys = try? HandshakeMessages.readResponse(layout, for: initiation),
            let keypair = try? TransportKeypair(
                keys: keys, localIndex: initiation.senderIndex, remoteIndex: layout.senderIndex, isInitiator: true,
                created: now)
        else {
            statistics.responsesDropped += 1
            if connection.initiation?.senderIndex == initiation.senderIndex {
                connections[id]!.initiation = nil
                connections[id]!.nextInitiationAt = connections[id]!.nextInitiationAt ?? now
            } else {
                connections[id]!.retireSuperseded()
            }
            return
        }
        connections[id]!.adoptHandshakeRoute(source)
        connections[id]!.installInitiatorKeypair(keypair, now: now)
        collectRetiredIndices(id)
    }

    private mutating func handleCookieReply(_ bytes: [UInt8], now: Instant) {
        guard let layout = try? CookieReply(decoding: bytes),
            let id = connectionByIndex[layout.receiverIndex],
            let initiation = connections[id]?.initiation, initiation.senderIndex == layout.receiverIndex,
            let peer = peers[initiation.remoteStatic],
            let cookie = try? peer.outgoing.openCookie(
                layout.encryptedCookie, nonce: layout.nonce, answeringMac1: initiation.mac1),
            let restamped = try? HandshakeMessages.restamp(initiation, authenticator: peer.outgoing, cookie: cookie)
        else {
            statistics.responsesDropped += 1
            return
        }
        statistics.cookieRepliesAccepted += 1
        connections[id]!.cookie = cookie
        connections[id]!.initiation = restamped
        outbox.append((connections[id]!.route, restamped.datagram))
        statistics.initiationsSent += 1
    }

    /// A responder refused our pending initiation (or the one it replaced) because it speaks another protocol revision:
    /// a connection still setting up fails at once with ``ProtocolError/incompatibleProtocol(ours:theirs:)``. A
    /// refusal that does not open under the peer's credentials, names our own prologue, or reaches an established
    /// connection (a rekey) changes nothing.
    private mutating func handleRefusal(_ bytes: [UInt8], now: Instant) {
        guard let layout = try? HandshakeRefusal(decoding: bytes),
            let id = connectionByIndex[layout.receiverIndex], let connection = connections[id],
            connection.state == .connecting,
            let (initiation, _) = connection.initiation(answeredAt: layout.receiverIndex),
            let peer = peers[initiation.remoteStatic],
            let plaintext = try? peer.outgoing.openRefusal(
                layout.encryptedPrologue, nonce: layout.nonce, header: layout.header, answeringMac1: initiation.mac1),
            let prologue = HandshakeRefusal.prologue(inPlaintext: plaintext),
            prologue != configuration.prologue
        else {
            statistics.responsesDropped += 1
            return
        }
        statistics.refusalsAccepted += 1
        connections[id]!.finish(
            reason: .incompatibleProtocol(ours: configuration.prologue, theirs: prologue), now: now)
        collectRetiredIndices(id)
    }

    /// Sends a (re)initiation for connection `id` if one is due: a fresh ephemeral key and timestamp each time.
    mutating func sendInitiationIfWanted(_ id: ConnectionID, now: Instant) {
        // Asked where the connection lies: every timer pass asks every connection, and a copy of one retains each
        // of its buffers (in a 64-member session this copy was an eighth of the simulator's time).
        guard let slot = connections.slot(of: id),
            connections.withConnection(in: slot, { $0.wantsInitiation(now: now) })
        else { return }
        guard let connection = connections[id] else { return }
        guard let peer = peers[connection.peer] else {
            connections[id]!.finish(reason: .unknownPeer, now: now)
            return
        }
        if connection.canResendInitiation, let pending = connection.initiation {
            connections[id]!.initiationResent(retryDelay: retryWait(after: connection), now: now)
            sendInitiation(pending.datagram, for: connection, now: now)
            return
        }
        let index = allocateIndex()
        let timestamp = timestamps.timestamp(now: now)
        guard
            let initiation = try? HandshakeMessages.makeInitiation(
                localStatic: configuration.identity.agreementKey, remoteStatic: connection.peer,
                presharedKey: peer.credentials.presharedKey, prologue: configuration.prologue, senderIndex: index,
                timestamp: timestamp,
                resumption: connection.state == .established ? connection.current?.remoteIndex : nil,
                authenticator: peer.outgoing, cookie: connection.cookie, using: &random)
        else { return }
        connections[id]!.initiationSent(
            initiation, authenticator: peer.incoming, retryDelay: retryWait(after: connection), now: now)
        connectionByIndex[index] = id
        collectRetiredIndices(id)
        sendInitiation(initiation.datagram, for: connection, now: now)
    }

    /// Queues an initiation on the connection's route and, for a first handshake, also through every relay and,
    /// from the first retry on, to the peer's other addresses (the first response to arrive decides the route; hole
    /// punching may move it to a direct one afterwards). A rekey goes on the route in use only.
    ///
    /// The other addresses wait for the first retry, the initial retry interval (250 ms) after the first attempt, as
    /// Happy Eyeballs (RFC 8305) staggers its attempts: a peer that answers at its first address is reached there
    /// without a second handshake anywhere else, and one that does not is tried everywhere a quarter second later.
    private mutating func sendInitiation(_ datagram: [UInt8], for connection: Connection, now: Instant) {
        outbox.append((connection.route, datagram))
        statistics.initiationsSent += 1
        guard connection.state == .connecting else { return }
        for route in relayedRoutes(to: connection.peer, now: now) where route != connection.route {
            outbox.append((route, datagram))
        }
        if case .direct(let address) = connection.route {
            for route in turnRoutes(to: address) where route != connection.route { outbox.append((route, datagram)) }
        }
        guard connection.initiationsSent > 0 else { return }
        for address in connection.alternateAddresses where Route.direct(address) != connection.route {
            outbox.append((.direct(address), datagram))
            for route in turnRoutes(to: address) { outbox.append((route, datagram)) }
        }
    }

    /// The wait before the next retry of `connection`'s initiation: its backoff delay plus a random extra of up to a
    /// quarter of it (at most the configured jitter), so peers do not retry in lockstep.
    private mutating func retryWait(after connection: Connection) -> Duration {
        let delay = connection.initiationRetryDelay
        let jitterLimit = min(configuration.connection.handshakeJitter, delay / 4)
        return delay + Duration.nanoseconds(Int64.random(in: 0...max(jitterLimit.nanoseconds, 0), using: &random))
    }
}
