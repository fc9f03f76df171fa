import HuddleCrypto
import HuddleWire

/// Members relaying for members (PROTOCOL.md section 10.3): the relay protocol of section 10, served on a member's own
/// socket to the keys its session admits, and registrations with members this endpoint reaches directly.
extension Endpoint {
    /// One relay this endpoint registers with that is a member of its session.
    public struct MemberRelay: Sendable, Hashable {
        /// The member's static key.
        public let member: X25519PublicKey
        /// The member's address (its direct route's).
        public let address: NetworkAddress
        /// Whether the member confirmed the registration and it has not lapsed.
        public let isRegistered: Bool
        /// REGISTERs sent since the member last confirmed (or ever, when it never did): a member that does not
        /// relay (it opted out, or its version has no relay) never answers.
        public let unansweredRegistrations: Int
    }

    /// Relays for `members` only: they register with this endpoint (the relay protocol, on this endpoint's own
    /// socket) and it forwards their sealed packets to each other, each at most
    /// ``ProtocolLimits/memberRelayBytesPerSecond``. Calling it again replaces the set; registrations of keys left
    /// out end at once. Until it is called, relay requests are dropped and counted.
    public mutating func serveAsRelay(for members: Set<X25519PublicKey>) {
        if relayService == nil {
            var configuration = RelayServerConfiguration(identity: configuration.identity)
            configuration.maxRegistrations = ProtocolLimits.maxMemberRelayRegistrations
            configuration.bytesPerSecondPerClient = ProtocolLimits.memberRelayBytesPerSecond
            configuration.burstBytesPerClient = ProtocolLimits.memberRelayBurstBytes
            relayService = RelayServer(configuration: configuration, generator: &random)
        }
        relayService!.admit(only: members.subtracting([staticKey]))
    }

    /// Stops relaying for members: their registrations end and further relay requests are dropped and counted.
    public mutating func stopServingAsRelay() {
        relayService = nil
    }

    /// What this endpoint relayed for members, or `nil` when it does not relay (``serveAsRelay(for:)``).
    public var relayServiceStatistics: RelayServerStatistics? { relayService?.statistics }

    /// Members registered with this endpoint's relay now.
    public var relayServiceRegistrations: Int { relayService?.registrationCount ?? 0 }

    /// Registers with `member`, a session member this endpoint reaches directly at `address`, as a relay: peers that
    /// cannot be reached directly are then reached through it, when they registered with it too. Registering again
    /// at another address moves the registration; at most ``ProtocolLimits/maxMemberRelays`` members at once (more
    /// are ignored). Dedicated relays (``addRelay(_:now:)``) are counted apart.
    public mutating func addMemberRelay(_ member: X25519PublicKey, at address: NetworkAddress, now: Instant) {
        if let index = relayClients.firstIndex(where: { $0.member == member }) {
            guard relayClients[index].address != address else { return }
            relayClients.remove(at: index)
        }
        guard member != staticKey, relayClients.count(where: { $0.member != nil }) < ProtocolLimits.maxMemberRelays,
            !relayClients.contains(where: { $0.address == address })
        else { return }
        relayClients.append(RelayClient(address: address, member: member, now: now))
    }

    /// Stops registering with `member` (it left, or no longer relays for this endpoint).
    public mutating func removeMemberRelay(_ member: X25519PublicKey) {
        relayClients.removeAll { $0.member == member }
    }

    /// The address of this endpoint's established direct connection to `peer`; `nil` while there is none (or it is
    /// relayed). Reads the connection in place, without copying it as ``connection(_:)`` does: the session core asks
    /// for every member each time it chooses its member relays.
    public func establishedDirectAddress(of peer: X25519PublicKey) -> NetworkAddress? {
        guard let id = connectionByPeer[peer], let slot = connections.slot(of: id),
            connections.slots[slot]?.state == .established, case .direct(let address)? = connections.slots[slot]?.route
        else { return nil }
        return address
    }

    /// The members this endpoint registers with as relays.
    public func memberRelays(now: Instant) -> [MemberRelay] {
        relayClients.compactMap { client in
            client.member.map {
                MemberRelay(
                    member: $0, address: client.address, isRegistered: client.isRegistered(now: now),
                    unansweredRegistrations: client.unansweredRegistrations)
            }
        }
    }

    /// The member relaying `route`, when it goes through a member this endpoint registers with; `nil` for a direct
    /// route, a dedicated relay's or a TURN server's.
    public func memberRelay(on route: Route) -> X25519PublicKey? {
        guard case .relayed(let relay, _) = route else { return nil }
        return relayClients.first { $0.address == relay }?.member
    }

    /// Handles RELAY_REGISTER or RELAY_SEND from `source`: the relay service answers or forwards it (a copy into the
    /// outbox, rewritten into RELAY_DELIVER), or drops and counts it, when this endpoint relays for members;
    /// otherwise it is dropped and counted as malformed, as before members relayed.
    mutating func handleRelayRequest(
        _ datagram: UnsafeMutableRawBufferPointer, from source: NetworkAddress, now: Instant
    ) {
        guard relayService != nil else {
            statistics.malformedDropped += 1
            return
        }
        // The forwarded copy leaves through this endpoint's transmit buffer, sized for its own datagrams; members
        // send relayed packets at the base size (section 7.13), so only a hostile one sends larger.
        guard datagram.count <= transmitBufferSize else {
            statistics.relayPacketsDropped += 1
            return
        }
        if let destination = relayService!.handle(datagram: datagram, from: source, now: now) {
            outbox.append((.direct(destination), Array(UnsafeRawBufferPointer(datagram))))
        }
        while let reply = relayService!.pollTransmit() { outbox.append((.direct(reply.destination), reply.datagram)) }
        // Registrations are the session's business, which knows its members; the queue is not kept.
        while relayService!.pollEvent() != nil {}
    }
}
