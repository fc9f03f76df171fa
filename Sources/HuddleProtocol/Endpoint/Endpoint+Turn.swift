import HuddleWire

extension Endpoint {
    /// Allocates on the TURN server `server` (ignored beyond ``ProtocolLimits/maxTurnServers`` or when already
    /// known). A first handshake then also goes through the allocation to each address of the peer, and peers reach
    /// this node at the allocation's relayed address (see ``turnAllocations``). A TCP server added while a UDP one is
    /// known stands by as its fallback (see ``TurnServer``).
    public mutating func addTurnServer(_ server: TurnServer, now: Instant) {
        let address = server.serverAddress
        guard turnClients.count < ProtocolLimits.maxTurnServers, !turnClients.contains(where: { $0.server == address })
        else { return }
        let isFallback =
            server.transport == .tcp
            && (configuration.turnServers.contains { $0.transport == .udp }
                || turnClients.contains { $0.server.transport == .udp })
        turnClients.append(
            TurnClient(server: address, credentials: server.credentials, standingBy: isFallback, now: now))
        noteTurnChange(address)
        if isFallback, turnFallbackAt == nil { turnFallbackAt = now + ProtocolLimits.turnStreamFallbackDelay }
    }

    /// Each TURN server this endpoint uses, with the relayed address it granted (`nil` until it has, after a failure,
    /// or while a TCP fallback stands by) and the latest failure, if any.
    public var turnAllocations:
        [(server: TurnServerAddress, relayed: NetworkAddress?, failure: TurnFailure?, isStandingBy: Bool)]
    {
        turnClients.map { ($0.server, $0.relayedAddress, $0.lastFailure, $0.isStandingBy) }
    }

    /// Each STUN server this endpoint asks, with where it last saw this node (`nil` until it answered).
    public var stunAnswers: [(server: NetworkAddress, mapped: NetworkAddress?)] {
        stunClients.map { ($0.server, $0.mappedAddress) }
    }

    /// The TURN routes to `address`: one through each allocation the server has granted.
    func turnRoutes(to address: NetworkAddress) -> [Route] {
        turnClients.filter { $0.relayedAddress != nil }.map { .turn(server: $0.server, peer: address) }
    }

    /// Lets each of `addresses` send to this node's relayed addresses.
    mutating func permitThroughTurn(_ addresses: [NetworkAddress], now: Instant) {
        for index in turnClients.indices {
            for address in addresses { turnClients[index].permit(address, now: now, using: &random) }
        }
    }

    /// A datagram from the TURN server of `turnClients[index]`: a response the client takes in, or a peer's packet,
    /// which is handled as if it came on the TURN route to that peer.
    mutating func handleTurnDatagram(_ datagram: UnsafeMutableRawBufferPointer, from index: Int, now: Instant) {
        let droppedBefore = turnClients[index].datagramsDropped
        let delivered = turnClients[index].handle(datagram, now: now, using: &random)
        statistics.turnDatagramsDropped += turnClients[index].datagramsDropped - droppedBefore
        collectTurnOutput(index, now: now)
        guard let (peer, payload) = delivered else { return }
        statistics.turnPacketsReceived += 1
        let route = Route.turn(server: turnClients[index].server, peer: peer)
        dispatch(UnsafeMutableRawBufferPointer(rebasing: datagram[payload]), from: route, now: now)
    }

    /// Moves what `turnClients[index]` has to send into the outbox (over UDP; a TCP client keeps its bytes for
    /// ``pollTurnStreamBytes(to:)``), and takes its events: a grant's mapped address is a reflexive address of this
    /// node's, and its relayed address is permitted for peers on the same server (whose packets come from that
    /// server's relayed addresses).
    mutating func collectTurnOutput(_ index: Int, now: Instant) {
        // Events first: a grant adds a permission, whose request then leaves with everything else.
        while let event = turnClients[index].pollEvent() {
            noteTurnChange(turnClients[index].server)
            switch event {
            case .allocated(let relayed, let mapped):
                learnReflexiveAddress(mapped)
                turnClients[index].permit(relayed, now: now, using: &random)
                // A handshake waiting for its response may have gone out before the allocation could carry it.
                for id in connectionOrder {
                    connections.withConnection(in: connections.slot(of: id)!) { connection in
                        if connection.state == .connecting { connection.resendInitiationSoon(now: now) }
                    }
                }
                if turnClients[index].server.transport == .udp { udpTurnAllocated(index, now: now) }
            case .failed:
                // Kept by the client (``TurnClient/lastFailure``) for ``turnAllocations``; it retries by itself.
                // With no UDP allocation left, a TCP fallback standing by is due now: the loss took a timeout.
                if turnClients[index].server.transport == .udp, turnFallbackAt == nil,
                    turnClients.contains(where: \.isStandingBy), !hasUDPAllocation
                {
                    turnFallbackAt = now
                }
            }
        }
        guard turnClients[index].server.transport == .udp else { return }
        let server = turnClients[index].server.address
        while let datagram = turnClients[index].pollTransmit() { outbox.append((.direct(server), datagram)) }
    }

    // MARK: - Falling back to TCP

    /// Runs the TCP fallback's clock: activates the TCP servers standing by once UDP went
    /// ``ProtocolLimits/turnStreamFallbackDelay`` without an allocation.
    mutating func handleTurnFallback(now: Instant) {
        guard let at = turnFallbackAt, at <= now else { return }
        turnFallbackAt = nil
        guard !hasUDPAllocation else { return }
        for index in turnClients.indices where turnClients[index].isStandingBy {
            noteTurnChange(turnClients[index].server)
            turnClients[index].activate(now: now)
            turnClients[index].handleTimeout(now: now, using: &random)
        }
    }

    /// Whether a TURN server granted an allocation over UDP (then no TCP fallback is needed).
    private var hasUDPAllocation: Bool {
        turnClients.contains { $0.server.transport == .udp && $0.relayedAddress != nil }
    }

    /// A UDP allocation works (again): connections carried over a TCP allocation move to it, and the TCP servers
    /// stand by again (deallocating and closing their connections).
    private mutating func udpTurnAllocated(_ index: Int, now: Instant) {
        turnFallbackAt = nil
        let udp = turnClients[index].server
        for id in connectionOrder {
            connections.withConnection(in: connections.slot(of: id)!) { connection in
                guard case .turn(let server, let peer) = connection.route, server.transport == .tcp else { return }
                connection.moveToRelayedRoute(.turn(server: udp, peer: peer))
            }
        }
        for tcp in turnClients.indices where turnClients[tcp].server.transport == .tcp && !turnClients[tcp].isStandingBy
        {
            turnClients[tcp].standBy(now: now, using: &random)
            noteTurnChange(turnClients[tcp].server)
        }
    }

    /// Queues a ``EndpointEvent/turnChanged(_:)`` for `server`, once until it is polled.
    mutating func noteTurnChange(_ server: TurnServerAddress) {
        if !turnChanges.contains(server) { turnChanges.append(server) }
    }

    // MARK: - TCP connections to TURN servers

    /// The next thing to do with a TCP connection to a TURN server: open it (then report
    /// ``turnStreamOpened(_:now:)`` or ``turnStreamClosed(_:now:)``), or close it once its bytes are written.
    public mutating func pollTurnStreamCommand() -> (server: TurnServerAddress, command: TurnClient.StreamCommand)? {
        for index in turnClients.indices where turnClients[index].server.transport == .tcp {
            if let command = turnClients[index].pollStreamCommand() { return (turnClients[index].server, command) }
        }
        return nil
    }

    /// The next bytes to write on the TCP connection to `server`: ask only while the connection can take them; the
    /// endpoint holds at most ``ProtocolLimits/maxTurnStreamQueuedBytes`` meanwhile, and drops (and counts) packets
    /// beyond it, as a full link would.
    public mutating func pollTurnStreamBytes(to server: TurnServerAddress) -> [UInt8]? {
        guard let index = turnClients.firstIndex(where: { $0.server == server }) else { return nil }
        return turnClients[index].pollTransmit()
    }

    /// The TCP connection to `server` is open.
    public mutating func turnStreamOpened(_ server: TurnServerAddress, now: Instant) {
        guard let index = turnClients.firstIndex(where: { $0.server == server }) else { return }
        turnClients[index].streamOpened(now: now, using: &random)
        collectTurnOutput(index, now: now)
    }

    /// The TCP connection to `server` could not be opened, or closed: its allocation is gone.
    public mutating func turnStreamClosed(_ server: TurnServerAddress, now: Instant) {
        guard let index = turnClients.firstIndex(where: { $0.server == server }) else { return }
        turnClients[index].streamClosed(now: now)
        collectTurnOutput(index, now: now)
    }

    /// Bytes read from the TCP connection to `server`, in any chunks: each whole message in them is handled as a
    /// datagram from that server would be (decrypted in place in `chunk`). A stream that loses its framing is closed
    /// (see ``pollTurnStreamCommand()``) and counted as a dropped TURN datagram.
    public mutating func handleTurnStream(
        _ chunk: UnsafeMutableRawBufferPointer, from server: TurnServerAddress, now: Instant
    ) {
        guard let index = turnClients.firstIndex(where: { $0.server == server }) else { return }
        // The framer leaves the client while it reads: each message goes back into the client, which must not be
        // reached through the framer's own storage at the same time.
        var framer = TurnStreamFramer()
        swap(&framer, &turnClients[index].framer)
        do {
            try framer.consume(chunk) { message in
                handleTurnDatagram(message, from: index, now: now)
            }
            swap(&framer, &turnClients[index].framer)
        } catch {
            turnClients[index].streamBroken(now: now)
            statistics.turnDatagramsDropped += 1
            collectTurnOutput(index, now: now)
        }
    }

    /// Queues `bytes` (a peer's packet, framed) for the TCP connection of `turnClients[index]`; dropped and counted
    /// when the queue is full or the connection is not open.
    mutating func queueOnStream(_ bytes: [UInt8], for index: Int) {
        if !turnClients[index].queueStreamData(bytes) {
            statistics.turnPacketsSent -= 1
            statistics.turnPacketsDropped += 1
        }
    }
}
