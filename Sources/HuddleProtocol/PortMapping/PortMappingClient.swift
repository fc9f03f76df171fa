import HuddleWire

/// Keeps a UDP port mapping for this node's socket on its home router, as a sans-IO machine inside the
/// ``Endpoint``: the router then forwards an external port to the socket, so peers behind any NAT (symmetric ones
/// too) reach this node directly at the mapped address.
///
/// It asks PCP first (RFC 6887 MAP), and NAT-PMP (RFC 6886) when the gateway says it speaks only that or does not
/// answer PCP; each request goes ``ProtocolLimits/portMappingAttempts`` times, 250 ms apart and doubling. A
/// mapping is renewed at half its lifetime (at most ``ProtocolLimits/portMappingRenewInterval`` apart) and
/// deleted by ``release(now:)`` when the node closes. Requests leave from the node's own socket, so the mapping's
/// internal port is the socket's.
///
/// Responses count only from the gateway's port; a PCP response must also echo the mapping's 96-bit random nonce.
/// NAT-PMP has no nonce: a host on the LAN that forges an answer can make this node advertise a wrong address (it
/// could as well answer in the router's place). What a peer reaches at an advertised address is still
/// authenticated by the handshake.
public struct PortMappingClient {
    /// The gateway, at ``ProtocolLimits/portMappingServerPort``.
    public let gateway: NetworkAddress
    /// This node's address toward the gateway, with the socket's port: PCP's client address and internal port.
    public let localAddress: NetworkAddress
    /// Datagrams from the gateway dropped: not an answer to a request in flight, or malformed.
    public private(set) var datagramsDropped = 0
    /// The mapping as it stands.
    public private(set) var mapping: PortMapping

    /// The protocol asked now (this client speaks the two on port 5351).
    private var method = Method.pcp

    private enum Method {
        case pcp
        case natPMP

        var reported: PortMappingProtocol { self == .pcp ? .pcp : .natPMP }
    }
    private let nonce: [UInt8]
    /// The request in flight: its sends so far and when the next goes; nil when none is.
    private var pending: (attempts: Int, retransmitAt: Instant)?
    /// When the next request starts (a renewal, or a retry after a failure); nil once released.
    private var nextRequestAt: Instant?
    /// NAT-PMP answers the external address and the mapping separately.
    private var natPMPAddress: [UInt8]?
    private var natPMPMapping: (externalPort: UInt16, lifetime: UInt32)?
    private var outbox: [[UInt8]] = []

    /// A client for `gateway` (its address, any port: requests go to port 5351), asking for `localAddress`'s port;
    /// the first request goes at the first ``handleTimeout(now:)``. `nonce` is 12 random bytes.
    public init(gateway: NetworkAddress, localAddress: NetworkAddress, nonce: [UInt8], now: Instant) {
        precondition(nonce.count == 12, "a PCP mapping nonce has 12 bytes")
        let server = gateway.withPort(ProtocolLimits.portMappingServerPort)
        self.gateway = server
        self.localAddress = localAddress
        self.nonce = nonce
        mapping = PortMapping(gateway: server)
        nextRequestAt = now
    }

    /// When ``handleTimeout(now:)`` has something to do; nil once released.
    public var nextDeadline: Instant? { pending?.retransmitAt ?? nextRequestAt }

    /// The next datagram for the gateway, if any.
    public mutating func pollTransmit() -> [UInt8]? {
        outbox.isEmpty ? nil : outbox.removeFirst()
    }

    /// Sends what is due at `now`: a new request or renewal, a retransmission, or the next protocol after one went
    /// unanswered. Returns whether ``mapping`` changed (a failure).
    @discardableResult
    public mutating func handleTimeout(now: Instant) -> Bool {
        if let request = pending, request.retransmitAt <= now {
            if request.attempts < ProtocolLimits.portMappingAttempts {
                send(now: now, attempts: request.attempts + 1)
                return false
            }
            pending = nil
            if method == .pcp {
                method = .natPMP
                send(now: now, attempts: 1)
                return false
            }
            return fail(.unanswered, now: now, retryAfter: ProtocolLimits.portMappingRetryInterval)
        }
        guard pending == nil, let start = nextRequestAt, start <= now else { return false }
        nextRequestAt = nil
        // A renewal keeps to the protocol that mapped; anything else starts over with PCP.
        method = mapping.mappingProtocol == .natPMP ? .natPMP : .pcp
        natPMPAddress = nil
        natPMPMapping = nil
        send(now: now, attempts: 1)
        return false
    }

    /// Handles a datagram from the gateway; returns whether ``mapping`` changed. Anything that is not an answer to
    /// the request in flight is dropped and counted.
    @discardableResult
    public mutating func handle(_ datagram: UnsafeRawBufferPointer, now: Instant) -> Bool {
        guard pending != nil else {
            datagramsDropped += 1
            return false
        }
        switch method {
        case .pcp: return handlePCP(datagram, now: now)
        case .natPMP: return handleNATPMP(datagram, now: now)
        }
    }

    /// Deletes the mapping at the gateway (one request with lifetime 0, not retransmitted: the node is closing)
    /// and stops every timer. Returns whether ``mapping`` changed.
    @discardableResult
    public mutating func release(now: Instant) -> Bool {
        pending = nil
        nextRequestAt = nil
        guard let external = mapping.externalAddress else { return false }
        switch method {
        case .pcp:
            outbox.append(pcpRequest(lifetime: 0, suggesting: external))
        case .natPMP:
            outbox.append(
                NATPMPRequest.mapUDP(internalPort: localAddress.port, suggestedExternalPort: 0, lifetime: 0).encoded())
        }
        mapping = PortMapping(gateway: gateway)
        return true
    }

    // MARK: - Requests

    private mutating func send(now: Instant, attempts: Int) {
        pending = (attempts, now + ProtocolLimits.portMappingInitialRetransmission * (1 << (attempts - 1)))
        switch method {
        case .pcp:
            outbox.append(pcpRequest(lifetime: ProtocolLimits.portMappingLifetime, suggesting: mapping.externalAddress))
        case .natPMP:
            if natPMPAddress == nil { outbox.append(NATPMPRequest.externalAddress.encoded()) }
            if natPMPMapping == nil {
                outbox.append(
                    NATPMPRequest.mapUDP(
                        internalPort: localAddress.port,
                        suggestedExternalPort: mapping.externalAddress?.port
                            ?? localAddress.port, lifetime: ProtocolLimits.portMappingLifetime
                    ).encoded())
            }
        }
    }

    /// A MAP request asking for `suggested` (a renewal keeps its address and port), or for the local port on any
    /// address of the local address's family.
    private func pcpRequest(lifetime: UInt32, suggesting suggested: NetworkAddress?) -> [UInt8] {
        let anyAddress = [UInt8](repeating: 0, count: localAddress.family == .ipv4 ? 4 : 16)
        return PCPMapRequest(
            lifetime: lifetime, clientAddress: PCPMapRequest.pcpAddress(localAddress.addressBytes), nonce: nonce,
            internalPort: localAddress.port, suggestedExternalPort: suggested?.port ?? localAddress.port,
            suggestedExternalAddress: PCPMapRequest.pcpAddress(suggested?.addressBytes ?? anyAddress)
        ).encoded()
    }

    // MARK: - Responses

    private mutating func handlePCP(_ datagram: UnsafeRawBufferPointer, now: Instant) -> Bool {
        guard let response = try? PCPResponse(decoding: datagram), response.opcode == PCPMapRequest.opcode else {
            datagramsDropped += 1
            return false
        }
        if response.isNATPMPOnly {
            method = .natPMP
            send(now: now, attempts: 1)
            return false
        }
        guard let map = response.map, map.nonce == nonce, map.protocolNumber == PCPMapRequest.udp,
            map.internalPort == localAddress.port
        else {
            datagramsDropped += 1
            return false
        }
        guard response.resultCode == PCPResponse.success else {
            return fail(
                .refused(.pcp, resultCode: Int(response.resultCode)), now: now,
                retryAfter: Self.errorRetry(seconds: response.lifetime))
        }
        guard response.lifetime > 0, let external = Self.address(pcp: map.externalAddress, port: map.externalPort)
        else {
            return fail(.unusableGrant(.pcp), now: now, retryAfter: ProtocolLimits.portMappingRetryInterval)
        }
        return mapped(external, by: .pcp, lifetime: response.lifetime, now: now)
    }

    private mutating func handleNATPMP(_ datagram: UnsafeRawBufferPointer, now: Instant) -> Bool {
        guard let response = try? NATPMPResponse(decoding: datagram) else {
            datagramsDropped += 1
            return false
        }
        guard response.resultCode == NATPMPResponse.success else {
            return fail(
                .refused(.natPMP, resultCode: Int(response.resultCode)), now: now,
                retryAfter: ProtocolLimits.portMappingRetryInterval)
        }
        switch response.body {
        case .externalAddress(let address):
            natPMPAddress = address
        case .mappedUDP(let internalPort, let externalPort, let lifetime) where internalPort == localAddress.port:
            guard lifetime > 0, externalPort != 0 else {
                return fail(.unusableGrant(.natPMP), now: now, retryAfter: ProtocolLimits.portMappingRetryInterval)
            }
            natPMPMapping = (externalPort, lifetime)
        default:
            datagramsDropped += 1
            return false
        }
        guard let address = natPMPAddress, let granted = natPMPMapping else { return false }
        guard let external = Self.address(pcp: PCPMapRequest.pcpAddress(address), port: granted.externalPort) else {
            // 0.0.0.0: the gateway has no external address yet (RFC 6886 3.2 says it should have said so).
            return fail(.unusableGrant(.natPMP), now: now, retryAfter: ProtocolLimits.portMappingRetryInterval)
        }
        return mapped(external, by: .natPMP, lifetime: granted.lifetime, now: now)
    }

    private mutating func mapped(
        _ external: NetworkAddress, by method: PortMappingProtocol, lifetime: UInt32, now: Instant
    ) -> Bool {
        pending = nil
        let granted = Duration.seconds(lifetime)
        nextRequestAt = now + min(granted / 2, ProtocolLimits.portMappingRenewInterval)
        let before = mapping
        mapping = PortMapping(
            gateway: gateway, externalAddress: external, mappingProtocol: method, lifetime: granted, failure: nil)
        // A renewal that changed nothing is no news (the lifetime is the one asked for each time).
        return mapping != before
    }

    private mutating func fail(_ failure: PortMappingFailure, now: Instant, retryAfter: Duration) -> Bool {
        pending = nil
        nextRequestAt = now + retryAfter
        let before = mapping
        mapping = PortMapping(gateway: gateway, failure: failure)
        return mapping != before
    }

    /// How long after a PCP error to ask again: the error's lifetime (how long the server expects it to last),
    /// within 30 s and ``ProtocolLimits/portMappingRetryInterval``.
    private static func errorRetry(seconds: UInt32) -> Duration {
        min(max(.seconds(seconds), .seconds(30)), ProtocolLimits.portMappingRetryInterval)
    }

    /// A PCP address (16 bytes, IPv4-mapped for IPv4) as a ``NetworkAddress``; nil for the unspecified address.
    static func address(pcp bytes: [UInt8], port: UInt16) -> NetworkAddress? {
        let mappedPrefix = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF]
        let address: NetworkAddress?
        if Array(bytes.prefix(12)) == mappedPrefix {
            address = NetworkAddress(ipv4: bytes[12], bytes[13], bytes[14], bytes[15], port: port)
        } else {
            address = NetworkAddress(ipv6: bytes, port: port)
        }
        guard let address, !address.addressBytes.allSatisfy({ $0 == 0 }), port != 0 else { return nil }
        return address
    }
}
