import HuddleWire

extension Connection {
    /// The route packets to the peer take now.
    public var route: Route { paths.current }

    /// The UDP address packets to the peer are sent to now (the relay's, on a relayed route).
    public var address: NetworkAddress { paths.current.udpDestination }

    /// Whether the peer proved it receives on ``route`` (until then, sending is limited by
    /// ``ProtocolLimits/amplificationFactor``).
    public var isRouteValidated: Bool { paths.amplificationAllowance == nil }

    /// The addresses the peer offered in its latest CANDIDATES.
    public var peerCandidates: [NetworkAddress] { candidatesReceived }

    /// Records that a handshake message from the peer arrived on `route` and was answered or completed there: the
    /// route is validated (only the holder of the peer's key at that address could take part).
    mutating func adoptHandshakeRoute(_ route: Route) {
        let previous = paths.current
        paths.adoptHandshakeRoute(route)
        guard route != previous else { return }
        // What Path MTU discovery learned says nothing about another network path.
        if route.isAnotherPath(than: previous) { pathMTU.restart() }
        routeChanged()
    }

    /// Sets this endpoint's own addresses, offered to the peer while the connection is relayed.
    mutating func setLocalCandidates(_ candidates: [NetworkAddress]) {
        guard candidates != localCandidates else { return }
        localCandidates = candidates
        if paths.current.isRelayed, !candidates.isEmpty { candidatesOwed = true }
    }

    /// Decides, after an authenticated packet of `bytes` from `route`, whether the peer moved (RFC 9000 §9.3): a
    /// packet with anything but path probes, and the highest packet number so far, from a new route means the peer
    /// migrated (a NAT rebinding, a new network, or the switch between relay and direct). Probes and reordered
    /// older packets never move the connection, so a replayed packet cannot redirect it.
    mutating func observePacket(from route: Route, bytes: Int, probing: Bool, newest: Bool, now: Instant) {
        let quietSince = paths.lastReceivedOnCurrentAt
        paths.received(bytes, on: route, now: now)
        guard route != paths.current, !probing, newest, state == .established else { return }
        if route.isRelayed, !paths.current.isRelayed {
            // The peer sends through the relay while this side is direct. Right after hole punching that only means
            // the peer has not switched yet (each side validates the direct path on its own): packets still arrive
            // directly, and the connection stays. With nothing direct for a probe timeout, the peer lost the direct
            // path (a NAT mapping changed): follow it to the relay, and punch again.
            if let quietSince, now - quietSince < rtt.probeTimeout { return }
            statistics.migrations += 1
            _ = paths.switchTo(validated: route)
            resetCongestionState()
            routeChanged()
            punchAgain(now: now)
            return
        }
        statistics.migrations += 1
        if paths.migrate(to: route, receivedBytes: bytes, now: now) { resetCongestionState() }
        routeChanged()
    }

    /// Handles PATH_RESPONSE: the challenged route works. A relayed connection moves to a direct route that proved
    /// itself (hole punching succeeded).
    mutating func handlePathResponse(_ data: UInt64, now: Instant) {
        guard let validated = paths.validate(response: data) else { return }
        statistics.pathsValidated += 1
        if paths.current.isRelayed, !validated.isRelayed {
            _ = paths.switchTo(validated: validated)
            resetCongestionState()
            routeChanged()
        }
    }

    /// Handles CANDIDATES: while relayed, each direct address is challenged (the probes open this side's NAT toward
    /// the peer while the peer's probes open its own).
    mutating func handleCandidates(_ addresses: [WireAddress], now: Instant) {
        candidatesReceived = addresses.compactMap(NetworkAddress.init(wire:))
        guard paths.current.isRelayed else { return }
        punchAgain(now: now)
    }

    /// Challenges every direct candidate of the peer's, validated before or not (a connection on the relay knows its
    /// old direct routes no longer work as they were): the probes open this side's NAT toward the peer.
    private mutating func punchAgain(now: Instant) {
        for address in candidatesReceived { paths.challenge(.direct(address), force: true, now: now) }
    }

    /// After the route changed: tell the peer the address it is now seen at, offer candidates if relayed, and report.
    private mutating func routeChanged() {
        switch paths.current {
        case .direct: observedAddressOwed = true
        case .relayed, .turn: candidatesOwed = !localCandidates.isEmpty
        }
        if state == .established { events.append(.routeChanged(paths.current)) }
    }

    /// The congestion controller, RTT estimate and pacer start over on a new network path (RFC 9000 §9.4): what
    /// was learned about the old path says nothing about this one. A NAT rebinding (only the port changed) keeps
    /// them.
    mutating func resetCongestionState() {
        congestion = Self.makeCongestionController(id: id, peer: peer, configuration: configuration)
        rtt = RTTEstimator()
        pacer = Pacer(maxDatagramSize: configuration.maxDatagramSize)
        pathMTU.restart()
    }

    /// Whether the amplification limit stops every packet on the current route until the peer answers.
    var amplificationBlocked: Bool {
        paths.amplificationBlocks(datagramSize: configuration.maxDatagramSize)
    }

    /// Builds the next path probe, if one is due: a PATH_RESPONSE owed, else a PATH_CHALLENGE, alone in a packet
    /// padded to the full datagram size (the probe also shows the path carries that size). Probes are not
    /// ack-eliciting: a challenge is repeated by its own timer, a response when the challenge is. A probe that the
    /// amplification limit stops is dropped, so the caller looks for another.
    mutating func pollProbe(into buffer: UnsafeMutableRawBufferPointer, now: Instant) -> (route: Route, length: Int)? {
        while true {
            let frame: Frame
            let route: Route
            if let owed = paths.responsesOwed.popFirst() {
                frame = .pathResponse(owed.data)
                route = owed.route
            } else {
                let (challenge, reverted) = paths.dueChallenge(now: now)
                if reverted {
                    statistics.pathValidationFailures += 1
                    routeChanged()
                }
                guard let challenge else { return nil }
                frame = .pathChallenge(challenge.data)
                route = challenge.route
            }
            if let length = sealProbe(frame, on: route, into: buffer, now: now) {
                statistics.pathProbesSent += 1
                return (route, length)
            }
        }
    }

    /// Seals `frame` alone in a packet for `route`, padded to the full datagram size unless the amplification limit
    /// of an unvalidated route allows less (RFC 9000 §8.2.1). Returns `nil` when it does not fit even unpadded.
    private mutating func sealProbe(
        _ frame: Frame, on route: Route, into buffer: UnsafeMutableRawBufferPointer, now: Instant
    ) -> Int? {
        let allowance = route == paths.current ? paths.amplificationAllowance : nil
        let datagramSize = min(configuration.maxDatagramSize, allowance ?? configuration.maxDatagramSize)
        guard datagramSize >= TransportHeader.encodedLength + frame.encodedLength + TransportHeader.tagLength else {
            return nil
        }
        let payloadArea = UnsafeMutableRawBufferPointer(
            rebasing: buffer[TransportHeader.encodedLength..<(datagramSize - TransportHeader.tagLength)])
        var writer = ByteWriter(payloadArea)
        guard (try? frame.encode(into: &writer)) != nil,
            (try? Frame.encodePadding(count: writer.remaining, into: &writer)) != nil,
            let length = seal(buffer: buffer, writer: writer, record: Self.probeRecord, ackEliciting: false, now: now)
        else { return nil }
        if route == paths.current { paths.sent(length) }
        return length
    }

    /// What a path probe's packet records.
    private static let probeRecord: SentFrames = {
        var record = SentFrames()
        record.isValidationProbe = true
        return record
    }()

    /// Whether OBSERVED_ADDRESS or CANDIDATES waits to be sent.
    var addressesOwed: Bool { observedAddressOwed || candidatesOwed }

    /// Writes OBSERVED_ADDRESS (on a direct route) and CANDIDATES (on a relayed one) when owed; returns whether it
    /// wrote either. A flag that does not apply to the current route is dropped.
    mutating func fillAddresses(_ writer: inout ByteWriter, record: inout SentFrames) -> Bool {
        var wrote = false
        if observedAddressOwed {
            if case .direct(let address) = paths.current {
                if (try? Frame.observedAddress(address.wireAddress).encode(into: &writer)) != nil {
                    observedAddressOwed = false
                    wrote = true
                }
            } else {
                observedAddressOwed = false
            }
        }
        if candidatesOwed {
            if paths.current.isRelayed {
                let frame = Frame.candidates(localCandidates.prefix(WireLimits.maxCandidates).map(\.wireAddress))
                if (try? frame.encode(into: &writer)) != nil {
                    candidatesOwed = false
                    wrote = true
                }
            } else {
                candidatesOwed = false
            }
        }
        if wrote { record.carriesAddresses = true }
        return wrote
    }

    /// A lost packet carried addresses: send them again (with the values current now).
    mutating func addressesLost() {
        if case .direct = paths.current { observedAddressOwed = true }
        if paths.current.isRelayed, !localCandidates.isEmpty { candidatesOwed = true }
    }

    /// Moves from one relayed route to another, which works without a challenge (a TURN allocation over UDP that
    /// replaces one over TCP): packets go there from now on, and the peer follows when they arrive.
    mutating func moveToRelayedRoute(_ route: Route) {
        guard route.isRelayed, paths.current.isRelayed, route != paths.current else { return }
        _ = paths.switchTo(validated: route)
        statistics.migrations += 1
        resetCongestionState()
        routeChanged()
    }

    /// A direct route gone quiet (probes unanswered) falls back to the relay it came from, if one is known.
    mutating func fallBackToRelayIfQuiet(now: Instant) {
        guard !paths.current.isRelayed, let relay = paths.knownRelay else { return }
        _ = paths.switchTo(validated: relay)
        statistics.migrations += 1
        resetCongestionState()
        routeChanged()
        punchAgain(now: now)
    }
}

extension NetworkAddress {
    /// The address as the wire carries it.
    var wireAddress: WireAddress {
        // A NetworkAddress always has 4 or 16 address bytes.
        try! WireAddress(family: family.rawValue, bytes: addressBytes, port: port)
    }

    /// The address a wire address names.
    init?(wire: WireAddress) {
        if wire.family == 4 {
            self.init(ipv4: wire.bytes[0], wire.bytes[1], wire.bytes[2], wire.bytes[3], port: wire.port)
        } else {
            self.init(ipv6: wire.bytes, port: wire.port)
        }
    }
}
