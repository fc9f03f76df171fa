import HuddleWire

extension Endpoint {
    /// Allocates on the TURN server `server` (ignored beyond ``ProtocolLimits/maxTurnServers`` or when already
    /// known). A first handshake then also goes through the allocation to each address of the peer, and peers reach
    /// this node at the allocation's relayed address (see ``turnAllocations``).
    public mutating func addTurnServer(_ server: TurnServer, now: Instant) {
        guard turnClients.count < ProtocolLimits.maxTurnServers,
            !turnClients.contains(where: { $0.server == server.address })
        else { return }
        turnClients.append(TurnClient(server: server.address, credentials: server.credentials, now: now))
    }

    /// Each TURN server this endpoint uses, with the relayed address it granted (`nil` until it has, or after a
    /// failure) and the latest failure, if any.
    public var turnAllocations: [(server: NetworkAddress, relayed: NetworkAddress?, failure: TurnFailure?)] {
        turnClients.map { ($0.server, $0.relayedAddress, $0.lastFailure) }
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

    /// Moves what `turnClients[index]` has to send into the outbox, and takes its events: a grant's mapped address
    /// is a reflexive address of this node's, and its relayed address is permitted for peers on the same server
    /// (whose packets come from that server's relayed addresses).
    mutating func collectTurnOutput(_ index: Int, now: Instant) {
        // Events first: a grant adds a permission, whose request then leaves with everything else.
        while let event = turnClients[index].pollEvent() {
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
            case .failed:
                // Kept by the client (``TurnClient/lastFailure``) for ``turnAllocations``; it retries by itself.
                break
            }
        }
        let server = turnClients[index].server
        while let datagram = turnClients[index].pollTransmit() { outbox.append((.direct(server), datagram)) }
    }
}
