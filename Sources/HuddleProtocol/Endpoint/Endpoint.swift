import DequeModule
import HuddleCrypto
import HuddleWire

/// One UDP socket's worth of Huddle: many encrypted, reliable connections, the handshakes that create and rekey
/// them, and the drop rules for everything else — as a sans-IO state machine.
///
/// Inputs are ``handle(datagram:from:now:)``, ``handleTimeout(now:)`` and the application calls (``connect(to:at:now:)``,
/// ``send(_:on:to:)``, ...); outputs are ``pollTransmit(into:now:)`` (call until `nil`), ``pollEvent()`` and
/// ``nextDeadline``. Time always comes in as `now`; randomness from the seeded generator given at creation.
///
/// Bad input: anything that does not authenticate is dropped silently and counted in ``statistics``; an
/// authenticated peer that breaks the protocol gets CLOSE(protocolViolation) on its connection only.
public struct Endpoint {
    /// The configuration.
    public let configuration: EndpointConfiguration
    /// Counters of everything dropped or done.
    public internal(set) var statistics = EndpointStatistics()
    /// The summed counters of every connection removed so far: with the live connections' own, totals that never go
    /// down (for metrics).
    public private(set) var closedConnectionStatistics = ConnectionStatistics()

    var random: ChaChaRandomGenerator
    var timestamps: TimestampClock
    /// Set only through ``setPeer(_:_:)``, which keeps ``peerMacKeys`` in step.
    private(set) var peers: [X25519PublicKey: Peer] = [:]
    var admissions: [AdmissionID: Admission] = [:]
    var admittedPeers: [X25519PublicKey: AdmissionID] = [:]
    /// Pending peers admitted under load with a valid cookie (mac2): they proved their source address.
    var provedAdmittedPeers: Set<X25519PublicKey> = []
    var connections = ConnectionTable()
    var connectionOrder: [ConnectionID] = []
    var connectionByPeer: [X25519PublicKey: ConnectionID] = [:]
    var connectionByIndex: [ReceiverIndex: ConnectionID] = [:]
    var nextConnectionNumber: UInt64 = 1
    /// Handshake messages and relay registrations waiting to go out, each with its route.
    var outbox = Deque<(Route, [UInt8])>()
    /// The relays this endpoint registers with: dedicated ones and members of its session.
    var relayClients: [RelayClient] = []
    /// This endpoint relaying for its session's members (``serveAsRelay(for:)``); `nil` when it does not.
    var relayService: RelayServer?
    /// This endpoint's allocations on TURN servers.
    var turnClients: [TurnClient] = []
    /// When the TCP TURN servers standing by start, unless a UDP allocation is granted first.
    var turnFallbackAt: Instant?
    /// The STUN servers this endpoint asks for its reflexive address.
    var stunClients: [StunBindingClient] = []
    /// The gateways this endpoint keeps a port mapping on.
    var portMappingClients: [PortMappingClient] = []
    /// Port-mapped addresses the driver keeps (UPnP-IGD; ``setMappedAddresses(_:)``).
    public internal(set) var mappedAddresses: [NetworkAddress] = []
    /// Gateways whose port mapping changed since ``pollEvent()`` last reported them (each at most once).
    var portMappingChanges: [NetworkAddress] = []
    /// TURN servers whose allocation changed since ``pollEvent()`` last reported them (each at most once).
    var turnChanges: [TurnServerAddress] = []
    /// This endpoint's interface addresses (with its port), as the driver reports them.
    public internal(set) var localAddresses: [NetworkAddress] = []
    /// Addresses relays and peers report seeing this endpoint at, most recent last, at most
    /// ``ProtocolLimits/maxReflexiveAddresses``.
    public internal(set) var reflexiveAddresses: [NetworkAddress] = []
    /// Slots of closed connections whose events the owner had not taken when their timer closed them.
    var closedSlots: [Int] = []
    /// How far the receive windows of all connections have grown beyond their initial size, together; at most
    /// ``ProtocolLimits/maxReceiveWindowGrowthPerEndpoint``.
    public private(set) var receiveWindowGrowth = 0
    var cookieJar = CookieJar()
    var loadWindowStart = Instant.zero
    var initiationsInWindow = 0
    /// Under load, the initiations per source that may reach Diffie-Hellman.
    var initiationLimiter = InitiationRateLimiter()

    /// The distinct `mac1` keys that authenticate the authorised peers' initiations, each with how many peers share
    /// it (kept by ``setPeer(_:_:)``). Every member of a session shares one, so an initiation costs one keyed hash per
    /// key here, not one per peer: a stranger's garbage must not cost a 256-member node 256 hashes (TEST-MATRIX D1).
    var peerMacKeys: [PeerMacKey] = []

    /// One distinct incoming `mac1` key and how many peers use it.
    struct PeerMacKey {
        var incoming: MacAuthenticator
        var peers: Int
    }

    /// A peer's credentials and the `mac1` keys derived from them.
    struct Peer {
        var credentials: PeerCredentials
        /// Stamps messages we send to the peer (keyed to its static key).
        var outgoing: MacAuthenticator
        /// Verifies messages the peer sends us (keyed to our static key).
        var incoming: MacAuthenticator
    }

    /// An endpoint with `configuration`, drawing every random value (ephemeral keys, indices, jitter, cookie
    /// secrets) from `generator`: seed it from the system CSPRNG in production, from a test seed in the simulator.
    public init(configuration: EndpointConfiguration, generator: ChaChaRandomGenerator) {
        self.configuration = configuration
        self.random = generator
        self.timestamps = TimestampClock(wallClockAtOrigin: configuration.wallClockAtOrigin)
        for relay in configuration.relays.prefix(ProtocolLimits.maxRelays) { addRelay(relay, now: .zero) }
        for server in configuration.turnServers.prefix(ProtocolLimits.maxTurnServers) {
            addTurnServer(server, now: .zero)
        }
        let turnOverUDP = Set(turnClients.filter { $0.server.transport == .udp }.map(\.server.address))
        for server in configuration.stunServers.prefix(ProtocolLimits.maxStunServers)
        where !turnOverUDP.contains(server) && !stunClients.contains(where: { $0.server == server }) {
            stunClients.append(StunBindingClient(server: server, now: .zero))
        }
    }

    /// This endpoint's Noise static key.
    public var staticKey: X25519PublicKey { configuration.identity.agreementKey.publicKey }

    // MARK: - Peers and connections

    /// Authorises a peer: handshakes from its static key are answered, and ``connect(to:at:now:)`` can reach it.
    /// Replaces earlier credentials for the same key (the current session keys stay; the next handshake uses the
    /// new ones), and confirms a peer that an admission let in, so it is no longer forgotten when its connection
    /// ends.
    public mutating func addPeer(_ credentials: PeerCredentials) throws {
        admittedPeers[credentials.staticKey] = nil
        provedAdmittedPeers.remove(credentials.staticKey)
        setPeer(
            credentials.staticKey,
            Peer(
                credentials: credentials,
                outgoing: try MacAuthenticator(macSecret: credentials.macSecret, receiverStatic: credentials.staticKey),
                incoming: try MacAuthenticator(macSecret: credentials.macSecret, receiverStatic: staticKey)))
        // An initiation still waiting for its response was built with the old credentials and will not be answered
        // once the peer switched too: start over with the new ones at the next timer instead of after the retry
        // interval.
        if let id = connectionByPeer[credentials.staticKey] {
            connections[id]?.retryInitiationSoon()
        }
    }

    /// Forgets a peer and closes its connection, if any.
    public mutating func removePeer(_ staticKey: X25519PublicKey, now: Instant) {
        setPeer(staticKey, nil)
        admittedPeers[staticKey] = nil
        provedAdmittedPeers.remove(staticKey)
        if let id = connectionByPeer[staticKey] { close(id, code: .noError, reason: "removed", now: now) }
    }

    /// `count` bytes from the endpoint's generator (seeded at creation), for secrets the layers above draw: the
    /// sans-IO cores hold no generator of their own.
    public mutating func randomBytes(count: Int) -> [UInt8] {
        random.bytes(count: count)
    }

    /// Sets (or with `nil` removes) the peer for `key`, keeping ``peerMacKeys`` in step.
    mutating func setPeer(_ key: X25519PublicKey, _ peer: Peer?) {
        if let old = peers[key],
            let index = peerMacKeys.firstIndex(where: { $0.incoming.hasSameMac1Key(as: old.incoming) })
        {
            peerMacKeys[index].peers -= 1
            if peerMacKeys[index].peers == 0 { peerMacKeys.remove(at: index) }
        }
        peers[key] = peer
        guard let peer else { return }
        if let index = peerMacKeys.firstIndex(where: { $0.incoming.hasSameMac1Key(as: peer.incoming) }) {
            peerMacKeys[index].peers += 1
        } else {
            peerMacKeys.append(PeerMacKey(incoming: peer.incoming, peers: 1))
        }
    }

    /// The connection to `peer`, created (and its handshake started) if there is none. Throws
    /// ``ProtocolError/unknownPeer`` for a peer that was not added.
    ///
    /// The handshake goes to `address`; from its first retry on (250 ms later) also to each of `alternates`, the
    /// peer's other addresses (at most ``ProtocolLimits/maxAlternateAddresses``), and the first response decides where
    /// the connection lives. A member that advertises a LAN, an IPv6 and a public address is reached at whichever
    /// answers, not only at the first; an address on this endpoint's own network (``preferringLocalNetwork(_:local:)``)
    /// goes first, so a peer on the same LAN is met there rather than hairpinned through the router.
    @discardableResult
    public mutating func connect(
        to peer: X25519PublicKey, at address: NetworkAddress, alternates: [NetworkAddress] = [], now: Instant
    ) throws(ProtocolError)
        -> ConnectionID
    {
        if let id = liveConnection(to: peer) { return id }
        guard peers[peer] != nil else { throw .unknownPeer }
        let ordered = Self.preferringLocalNetwork(
            [address] + alternates.filter { $0 != address }, local: localAddresses)
        let id = makeConnection(peer: peer, route: .direct(ordered[0]), now: now)
        connections[id]!.alternateAddresses = Array(ordered.dropFirst().prefix(ProtocolLimits.maxAlternateAddresses))
        // The peer may answer, or dial back, from any of its addresses: each TURN allocation lets them in.
        permitThroughTurn([address] + connections[id]!.alternateAddresses, now: now)
        connections[id]!.requestHandshake(now: now)
        sendInitiationIfWanted(id, now: now)
        return id
    }

    /// `addresses` with those on this endpoint's own network first, in their order, then the rest in theirs. A
    /// member advertises its public address first (a port mapping, a reflexive or relayed address: what reaches it
    /// from anywhere), but a peer on the same LAN reaches it straight at its LAN address, not hairpinned through the
    /// router. "The same network" is a private or loopback IPv4 address in the same /24 as one of `local`'s, or an
    /// IPv6 address in the same /64 (interfaces' netmasks are not known here; a home LAN is a /24 or a /64).
    static func preferringLocalNetwork(_ addresses: [NetworkAddress], local: [NetworkAddress]) -> [NetworkAddress] {
        func network(_ address: NetworkAddress) -> [UInt8]? {
            let bytes = address.addressBytes
            switch address.family {
            case .ipv4:
                let isPrivate =
                    bytes[0] == 10 || bytes[0] == 127 || (bytes[0] == 172 && bytes[1] & 0xF0 == 16)
                    || (bytes[0] == 192 && bytes[1] == 168)
                return isPrivate ? [4] + bytes.prefix(3) : nil
            case .ipv6:
                return [6] + bytes.prefix(8)
            }
        }
        let ours = Set(local.compactMap(network))
        guard !ours.isEmpty else { return addresses }
        let near = addresses.filter { network($0).map(ours.contains) ?? false }
        return near + addresses.filter { !near.contains($0) }
    }

    /// Makes the still-connecting connection to `peer` start a handshake of its own when it only waits as a
    /// responder (it answered the peer's initiation, and the peer never confirmed the keys: the answer went to an
    /// initiation the peer had already replaced). Returns whether it did. Without this, both sides could wait for
    /// each other until the handshake timeout (TEST-MATRIX X2: a member paused mid-handshake).
    ///
    /// Only an answer older than the handshake retry interval counts as unconfirmed: a fresh one is a handshake in
    /// progress, which the peer confirms within a round trip, and a new initiation of ours would supersede the
    /// connection the peer has just established. When both sides' redials fell due together (the churn scenario's
    /// seed 1560 under late timers and batched reads), each side killed the other's fresh handshake this way at
    /// every redial, and the two members never met again.
    @discardableResult
    public mutating func initiateIfOnlyAnswering(_ peer: X25519PublicKey, now: Instant) -> Bool {
        guard let id = liveConnection(to: peer), let connection = connections[id], connection.state == .connecting,
            connection.initiation == nil, connection.nextInitiationAt == nil,
            connection.lastInitiationAcceptedAt.map({ now - $0 >= configuration.connection.handshakeRetryInterval })
                ?? true
        else { return false }
        connections[id]!.requestHandshake(now: now)
        sendInitiationIfWanted(id, now: now)
        return true
    }

    /// The connection with `id`, for inspection.
    public func connection(_ id: ConnectionID) -> Connection? {
        connections.slot(of: id).flatMap { connections.slots[$0] }
    }

    /// The connection to `peer`, if any.
    public func connectionID(for peer: X25519PublicKey) -> ConnectionID? { connectionByPeer[peer] }

    /// The peer of connection `id`, while the endpoint still has that connection (without copying the connection, as
    /// ``connection(_:)`` does).
    public func peer(of id: ConnectionID) -> X25519PublicKey? {
        guard let slot = connections.slot(of: id) else { return nil }
        return connections.slots[slot]?.peer
    }

    /// The connection to `peer` unless it is closing or draining, if any.
    public func liveConnectionID(for peer: X25519PublicKey) -> ConnectionID? { liveConnection(to: peer) }

    /// The connection to `peer` unless it is closing or draining (then a new one replaces it).
    func liveConnection(to peer: X25519PublicKey) -> ConnectionID? {
        guard let id = connectionByPeer[peer], connections[id]?.isOpen == true else { return nil }
        return id
    }

    /// Every live connection.
    public var connectionIDs: [ConnectionID] { connectionOrder }

    /// Queues a reliable message; see ``Connection/send(_:on:tag:)``.
    public mutating func send(
        _ message: [UInt8], on channel: ChannelID, to id: ConnectionID, tag: UInt64 = 0
    ) throws(ProtocolError)
        -> MessageSequence
    {
        // Through the slot: `connections[id] != nil` and the ID subscript's accessors copied the whole connection
        // (retaining each of its buffers) for every message.
        guard let slot = connections.slot(of: id) else { throw .connectionClosed }
        return try connections.withConnection(in: slot) { connection throws(ProtocolError) in
            try connection.send(message, on: channel, tag: tag)
        }
    }

    /// Queues an unreliable datagram; see ``Connection/sendDatagram(_:on:)``.
    public mutating func sendDatagram(
        _ bytes: [UInt8], on channel: ChannelID, to id: ConnectionID
    ) throws(ProtocolError) {
        guard let slot = connections.slot(of: id) else { throw .connectionClosed }
        try connections.withConnection(in: slot) { connection throws(ProtocolError) in
            try connection.sendDatagram(bytes, on: channel)
        }
    }

    /// Closes a connection (CLOSE with `code` and `reason` is sent if keys exist).
    public mutating func close(_ id: ConnectionID, code: CloseCode, reason: String, now: Instant) {
        connections[id]?.close(code: code, reason: reason, now: now)
        collectRetiredIndices(id)
    }

    mutating func makeConnection(peer: X25519PublicKey, route: Route, now: Instant) -> ConnectionID {
        let id = ConnectionID(nextConnectionNumber)
        nextConnectionNumber += 1
        // Path challenges draw from a generator of the connection's own, seeded from the endpoint's.
        let seed = random.bytes(count: 32)
        var connection = Connection(
            id: id, peer: peer, route: route, configuration: configuration.connection,
            random: try! ChaChaRandomGenerator(seed: seed), now: now)
        connection.setLocalCandidates(candidates)
        connections[id] = connection
        connectionOrder.append(id)
        connectionByPeer[peer] = id
        return id
    }

    /// A fresh random receiver index that is not in use.
    mutating func allocateIndex() -> ReceiverIndex {
        while true {
            let candidate = ReceiverIndex(UInt32.random(in: 1...UInt32.max, using: &random))
            if connectionByIndex[candidate] == nil { return candidate }
        }
    }

    /// Forgets indices a connection no longer uses.
    mutating func collectRetiredIndices(_ id: ConnectionID) {
        guard let slot = connections.slot(of: id) else { return }
        collectRetiredIndices(id, slot: slot)
    }

    /// ``collectRetiredIndices(_:)`` for the connection in `slot` of ``connections`` (no lookup, for hot paths).
    mutating func collectRetiredIndices(_ id: ConnectionID, slot: Int) {
        // Indices are the endpoint's own bookkeeping: taking them changes nothing the polls look at.
        let retired = connections.withConnection(in: slot, nominating: []) { connection in
            defer { connection.retiredIndices.removeAll() }
            return connection.retiredIndices
        }
        for index in retired where connectionByIndex[index] == id { connectionByIndex[index] = nil }
    }

    mutating func removeConnection(_ id: ConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        connectionOrder.removeAll { $0 == id }
        closedConnectionStatistics.add(connection.statistics)
        statistics.connectionsClosed += 1
        if connection.statistics.handshakes == 0 { statistics.handshakesNeverCompleted += 1 }
        receiveWindowGrowth -= connection.receiveWindow - ProtocolLimits.maxReassemblyBytesPerConnection
        // Only the peer's current connection: a replaced, drained one must not forget a peer that came back.
        if connectionByPeer[connection.peer] == id {
            connectionByPeer[connection.peer] = nil
            // A joiner that never became a member leaves nothing behind.
            if admittedPeers.removeValue(forKey: connection.peer) != nil {
                setPeer(connection.peer, nil)
                provedAdmittedPeers.remove(connection.peer)
            }
        }
        for (index, owner) in connectionByIndex where owner == id { connectionByIndex[index] = nil }
    }

    /// The buffer ``pollTransmit(into:now:)`` needs for every datagram it may build: the largest a connection may
    /// send (its Path MTU discovery ceiling) behind a relay envelope. A buffer of only
    /// ``ConnectionConfiguration/maxDatagramSize`` plus the envelope also works: packets then stay at the base size.
    public var transmitBufferSize: Int {
        max(
            configuration.connection.maxDatagramSize, configuration.connection.maxProbedDatagramSize ?? 0,
            HandshakeInitiation.encodedLength) + RelayEnvelope.headerLength
    }

    // MARK: - Events

    /// The next event, or `nil`. Messages count as consumed (and reopen flow-control credit) when returned here.
    public mutating func pollEvent() -> EndpointEvent? {
        if !turnChanges.isEmpty { return .turnChanged(turnChanges.removeFirst()) }
        if !portMappingChanges.isEmpty { return .portMappingChanged(portMappingChanges.removeFirst()) }
        // Only connections that changed since they last had no event can have one; each is drained before the next.
        while let slot = connections.eventCandidates.first {
            guard connections.isOccupied(slot) else {
                connections.dropFirstEventCandidate()
                continue
            }
            // The node-wide bound on grown receive windows: this connection may grow into what is left of it.
            let allowance = ProtocolLimits.maxReceiveWindowGrowthPerEndpoint - receiveWindowGrowth
            let (polled, grown) = connections.withConnection(in: slot, nominating: []) { connection in
                let window = connection.receiveWindow
                connection.receiveWindowCeiling = min(ProtocolLimits.maxReceiveWindowPerConnection, window + allowance)
                return (connection.pollEvent(), connection.receiveWindow - window)
            }
            receiveWindowGrowth += grown
            guard let event = polled else {
                connections.dropFirstEventCandidate()
                continue
            }
            // Taking a message may reopen flow-control credit (a window update to send) and move a deadline; an
            // empty poll, or any other event, changes nothing else (so it makes no transmit poll or deadline
            // refresh: those were a fifth of a 64-member simulation's time).
            if case .message = event { connections.nominate(slot, for: [.transmits, .deadline]) }
            let id = connections.id(inSlot: slot)
            // Read only for an event: the key is an array, a retain and a release on every empty poll.
            let peer = connections.withConnection(in: slot, nominating: []) { $0.peer }
            switch event {
            case .established: return .connected(id, peer: peer)
            case .message(let channel, let bytes): return .message(id, channel: channel, bytes: bytes)
            case .datagram(let channel, let bytes): return .datagram(id, channel: channel, bytes: bytes)
            case .delivered(let channel, let sequence, let tag):
                return .delivered(id, channel: channel, sequence: sequence, tag: tag)
            case .closed(let reason, let undelivered):
                return .closed(id, peer: peer, reason: reason, undelivered: undelivered)
            case .routeChanged(let route):
                return .routeChanged(id, peer: peer, route: route)
            case .unresponsive(let lastHeard):
                return .unresponsive(id, peer: peer, lastHeard: lastHeard)
            case .responsive:
                return .responsive(id, peer: peer)
            case .observedAddress(let address):
                learnReflexiveAddress(address)
                return pollEvent()
            }
        }
        return nil
    }

    // MARK: - Timers and transmission

    /// The earliest instant at which ``handleTimeout(now:)`` has work, if any. Reading it changes nothing.
    ///
    /// It is a `mutating get` only for the access it takes: reading a connection through a getter copies it (a
    /// retain and a release of every buffer it holds), and so does reading an endpoint stored in a class, or in an
    /// array slot, before calling a plain getter on it. A transport asks after every input; those copies were 2 % of a
    /// round trip's client CPU and about 15 % of a simulated churn run, and in-place access makes none.
    public var nextDeadline: Instant? {
        mutating get {
            // Each connection's deadline is cached as of its last change (``ConnectionTable``).
            var earliest = connections.earliestDeadline()
            for client in relayClients { earliest = min(earliest ?? client.nextRegisterAt, client.nextRegisterAt) }
            for client in turnClients { earliest = min(earliest ?? client.nextDeadline, client.nextDeadline) }
            if let turnFallbackAt { earliest = min(earliest ?? turnFallbackAt, turnFallbackAt) }
            for client in stunClients { earliest = min(earliest ?? client.nextDeadline, client.nextDeadline) }
            for case let deadline? in portMappingClients.lazy.map(\.nextDeadline) {
                earliest = min(earliest ?? deadline, deadline)
            }
            return earliest
        }
    }

    /// Runs the timers of every connection whose deadline has come, sends handshake retries and forgets closed
    /// connections.
    public mutating func handleTimeout(now: Instant) {
        for index in relayClients.indices {
            if let register = relayClients[index].registerIfDue(identity: configuration.identity, now: now) {
                outbox.append((.direct(relayClients[index].address), register))
            }
        }
        if turnFallbackAt != nil { handleTurnFallback(now: now) }
        for index in stunClients.indices where stunClients[index].nextDeadline <= now {
            stunClients[index].handleTimeout(now: now, using: &random)
            let server = stunClients[index].server
            while let datagram = stunClients[index].pollTransmit() { outbox.append((.direct(server), datagram)) }
        }
        if !portMappingClients.isEmpty { handlePortMappingTimeouts(now: now) }
        for index in turnClients.indices where turnClients[index].nextDeadline <= now {
            turnClients[index].handleTimeout(now: now, using: &random)
            collectTurnOutput(index, now: now)
        }
        let due = connections.dueSlots(at: now)
        for slot in due {
            let id = connections.id(inSlot: slot)
            connections.withConnection(in: slot) { $0.handleTimeout(now: now) }
            sendInitiationIfWanted(id, now: now)
            collectRetiredIndices(id, slot: slot)
        }
        // A connection closes only in its own timer (at the end of draining); one whose events the owner has not
        // taken yet stays until a later timeout finds them taken.
        for slot in due + closedSlots where connections.isOccupied(slot) {
            let (closed, drained) = connections.withConnection(in: slot, nominating: []) {
                ($0.state == .closed, $0.events.isEmpty)
            }
            guard closed else { continue }
            if drained {
                removeConnection(connections.id(inSlot: slot))
            } else if !closedSlots.contains(slot) {
                closedSlots.append(slot)
            }
        }
        closedSlots.removeAll { !connections.isOccupied($0) }
    }

    /// Writes the next datagram to send into `buffer` (at least the configured datagram size) and returns its
    /// destination and length, or `nil` when nothing is due. Handshake messages go first, then connections in
    /// round-robin order. `isPathProbe` marks a Path MTU probe, which must be sent as a datagram of its own (never
    /// in one segmentation-offload write with others).
    public mutating func pollTransmit(
        into buffer: UnsafeMutableRawBufferPointer, now: Instant
    ) -> (
        destination: NetworkAddress, length: Int, isPathProbe: Bool
    )? {
        while let (route, datagram) = outbox.popFirst() {
            let offset = headerRoom(for: route)
            precondition(buffer.count >= datagram.count + offset, "transmit buffer too small")
            datagram.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]).copyMemory(from: $0)
            }
            guard let (destination, length) = wrap(buffer, length: datagram.count, for: route, now: now) else {
                continue
            }
            return (destination, length, false)
        }
        // Only connections that changed since they last had nothing to send can have something: an input, a call,
        // or a deadline (the pacer's, a timer's) makes them candidates again. One datagram each, in turn.
        while let slot = connections.transmitCandidates.first {
            guard connections.isOccupied(slot) else {
                connections.dropFirstTransmitCandidate()
                continue
            }
            let polled = connections.withConnection(in: slot, nominating: [.events, .deadline]) {
                $0.pollTransmit(into: buffer, now: now)
            }
            guard let (route, length, isPathProbe) = polled else {
                connections.dropFirstTransmitCandidate()
                continue
            }
            connections.rotateTransmitCandidates()
            collectRetiredIndices(connections.id(inSlot: slot), slot: slot)
            let offset = headerRoom(for: route)
            if offset > 0 {
                // The packet moves behind the envelope header (a relayed path is the slow one; one move of at
                // most a datagram costs less than a second buffer for every packet).
                precondition(buffer.count >= length + offset, "transmit buffer too small")
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
                    .baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: length)
            }
            guard let (destination, wrapped) = wrap(buffer, length: length, for: route, now: now) else { continue }
            return (destination, wrapped, isPathProbe)
        }
        return nil
    }

    /// The bytes a packet on `route` needs in front of it: a RELAY_SEND header's 36 on a relayed route, a ChannelData
    /// header's 4 on a TURN route with a confirmed channel, none otherwise (a Send indication is built apart).
    private func headerRoom(for route: Route) -> Int {
        switch route {
        case .direct: return 0
        case .relayed: return RelayEnvelope.headerLength
        case .turn(let server, let peer):
            return turnClients.first { $0.server == server }?.channel(for: peer) == nil ? 0 : ChannelData.headerLength
        }
    }

    /// The datagram for `route` whose inner packet of `length` bytes is in place (behind ``headerRoom(for:)``): as
    /// is for a direct route, behind a RELAY_SEND header for a relayed one, behind a ChannelData header or inside a
    /// Send indication for a TURN one. `nil` when it cannot go: a TURN route whose allocation is gone, or a Send
    /// indication larger than the buffer (counted; the channel, asked for here, carries the next one).
    private mutating func wrap(
        _ buffer: UnsafeMutableRawBufferPointer, length: Int, for route: Route, now: Instant
    ) -> (destination: NetworkAddress, length: Int)? {
        switch route {
        case .direct(let address):
            return (address, length)
        case .relayed(let relay, let peer):
            RelayEnvelope.writeHeader(.relaySend, key: peer.bytes, into: buffer)
            statistics.relayedPacketsSent += 1
            return (relay, length + RelayEnvelope.headerLength)
        case .turn(let server, let peer):
            guard let index = turnClients.firstIndex(where: { $0.server == server }),
                turnClients[index].relayedAddress != nil
            else {
                statistics.turnPacketsDropped += 1
                return nil
            }
            statistics.turnPacketsSent += 1
            if let channel = turnClients[index].channel(for: peer) {
                ChannelData.writeHeader(channel: channel, length: length, into: buffer)
                guard server.transport == .tcp else { return (server.address, length + ChannelData.headerLength) }
                // Over TCP the frame is padded to 4 bytes and leaves through the stream's queue: one copy, on the
                // fallback path only.
                var framed = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<(length + ChannelData.headerLength)]))
                framed.append(contentsOf: repeatElement(0, count: (4 - framed.count % 4) % 4))
                queueOnStream(framed, for: index)
                return nil
            }
            turnClients[index].bindChannel(to: peer, now: now, using: &random)
            collectTurnOutput(index, now: now)
            let indication = turnClients[index].sendIndication(
                UnsafeRawBufferPointer(rebasing: buffer[0..<length]), to: peer, using: &random)
            if server.transport == .tcp {
                queueOnStream(indication, for: index)
                return nil
            }
            guard indication.count <= buffer.count else {
                statistics.turnPacketsDropped += 1
                return nil
            }
            indication.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return (server.address, indication.count)
        }
    }

    /// ``pollTransmit(into:now:)`` returning an array (allocates; for tests and the simulator).
    public mutating func pollTransmit(now: Instant) -> (destination: NetworkAddress, datagram: [UInt8])? {
        var buffer = [UInt8](repeating: 0, count: transmitBufferSize)
        let result = buffer.withUnsafeMutableBytes { pollTransmit(into: $0, now: now) }
        guard let result else { return nil }
        // A copy of exactly the datagram: the buffer's capacity is the largest datagram possible, and a simulator
        // holds many datagrams in its queues.
        return (result.destination, Array(buffer[0..<result.length]))
    }
}

extension Endpoint {
    /// Testing only: seals `payload` (arbitrary frame bytes, possibly invalid) under connection `id`'s current keys
    /// and queues it, so the simulator can play an authenticated peer that breaks the protocol (TEST-MATRIX F4-F6).
    @_spi(Testing)
    public mutating func queueRawPayload(_ payload: [UInt8], to id: ConnectionID) -> Bool {
        guard var connection = connections[id], let keypair = connection.current else { return false }
        var buffer = [UInt8](repeating: 0, count: TransportHeader.encodedLength + payload.count + 16)
        let packetNumber = connection.nextPacketNumber
        connection.nextPacketNumber += 1
        let length = buffer.withUnsafeMutableBytes { raw -> Int? in
            payload.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: raw[TransportHeader.encodedLength...]).copyMemory(from: source)
            }
            return try? keypair.seal(raw, payloadLength: payload.count, packetNumber: packetNumber)
        }
        guard let length else { return false }
        connections[id] = connection
        outbox.append((connection.route, Array(buffer[0..<length])))
        return true
    }
}
