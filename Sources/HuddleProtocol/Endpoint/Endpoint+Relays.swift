import HuddleCrypto
import HuddleWire

extension Endpoint {
    /// Registers with the relay at `address` (ignored beyond ``ProtocolLimits/maxRelays`` or when already known).
    /// Peers this endpoint cannot reach directly are then reached through it, if they are registered there too.
    public mutating func addRelay(_ address: NetworkAddress, now: Instant) {
        guard relayClients.count(where: { $0.member == nil }) < ProtocolLimits.maxRelays,
            !relayClients.contains(where: { $0.address == address })
        else { return }
        relayClients.append(RelayClient(address: address, now: now))
    }

    /// The relays this endpoint registers with, and whether each confirmed the registration at `now`.
    public func relays(now: Instant) -> [(address: NetworkAddress, registered: Bool)] {
        relayClients.filter { $0.member == nil }.map { ($0.address, $0.isRegistered(now: now)) }
    }

    /// Sets this endpoint's interface addresses (with the socket's port): candidates for hole punching that the
    /// driver knows and the core cannot.
    public mutating func setLocalAddresses(_ addresses: [NetworkAddress]) {
        localAddresses = Array(addresses.prefix(ProtocolLimits.maxCandidates))
        candidatesChanged()
    }

    /// The addresses offered to peers in CANDIDATES: port-mapped addresses first (a router forwards them to this
    /// node from anywhere), then reflexive addresses (the ones that work across NATs), then interface addresses, at
    /// most ``ProtocolLimits/maxCandidates``.
    var candidates: [NetworkAddress] {
        var all: [NetworkAddress] = []
        let mapped = portMappingClients.compactMap(\.mapping.externalAddress) + mappedAddresses
        for address in mapped + reflexiveAddresses.reversed() + localAddresses where !all.contains(address) {
            all.append(address)
        }
        return Array(all.prefix(ProtocolLimits.maxCandidates))
    }

    /// Remembers an address a relay or peer saw this endpoint at.
    mutating func learnReflexiveAddress(_ address: NetworkAddress) {
        guard reflexiveAddresses.last != address else { return }
        reflexiveAddresses.removeAll { $0 == address }
        reflexiveAddresses.append(address)
        if reflexiveAddresses.count > ProtocolLimits.maxReflexiveAddresses { reflexiveAddresses.removeFirst() }
        candidatesChanged()
    }

    mutating func candidatesChanged() {
        let current = candidates
        for id in connectionOrder {
            connections.withConnection(in: connections.slot(of: id)!) { $0.setLocalCandidates(current) }
        }
    }

    /// The relayed routes to `peer` through every relay that confirmed our registration (but `peer` itself, when it
    /// relays for us: a route through it to it is no route).
    func relayedRoutes(to peer: X25519PublicKey, now: Instant) -> [Route] {
        relayClients.filter { $0.isRegistered(now: now) && $0.member != peer }.map {
            .relayed(via: $0.address, peer: peer)
        }
    }

    /// Handles a relay packet (RELAY_CHALLENGE, RELAY_REGISTERED, RELAY_DELIVER) from `source`; anything not from
    /// one of this endpoint's relays is dropped and counted.
    mutating func handleRelayPacket(
        _ datagram: UnsafeMutableRawBufferPointer, type: PacketType, from source: NetworkAddress, now: Instant
    ) {
        guard let index = relayClients.firstIndex(where: { $0.address == source }) else {
            statistics.relayPacketsDropped += 1
            return
        }
        let raw = UnsafeRawBufferPointer(datagram)
        switch type {
        case .relayChallenge:
            guard let challenge = try? RelayChallenge(decoding: raw),
                let register = relayClients[index].handleChallenge(challenge, identity: configuration.identity)
            else {
                statistics.relayPacketsDropped += 1
                return
            }
            outbox.append((.direct(source), register))
        case .relayRegistered:
            let wasRegistered = relayClients[index].isRegistered(now: now)
            guard relayClients[index].handleRegistered(raw, now: now) else {
                statistics.relayPacketsDropped += 1
                return
            }
            if let observed = relayClients[index].observed { learnReflexiveAddress(observed) }
            // A handshake waiting for its response may have gone out before this relay could carry it.
            if !wasRegistered {
                for id in connectionOrder {
                    connections.withConnection(in: connections.slot(of: id)!) { connection in
                        if connection.state == .connecting { connection.resendInitiationSoon(now: now) }
                    }
                }
            }
        case .relayDeliver:
            guard let peer = try? X25519PublicKey(bytes: RelayEnvelope.key(of: raw)) else {
                statistics.relayPacketsDropped += 1
                return
            }
            statistics.relayedPacketsReceived += 1
            let inner = UnsafeMutableRawBufferPointer(rebasing: datagram[RelayEnvelope.headerLength...])
            dispatch(inner, from: .relayed(via: source, peer: peer), now: now)
        default:
            statistics.relayPacketsDropped += 1
        }
    }
}
