import HuddleWire

extension Endpoint {
    /// Starts keeping a UDP port mapping for this endpoint's socket on `gateway` (PCP, then NAT-PMP; port 5351),
    /// asking as `localAddress` (this node's address toward the gateway, with the socket's port). Ignored beyond
    /// ``ProtocolLimits/maxPortMappingGateways`` or for a gateway already asked. The mapped address is offered to
    /// peers first in CANDIDATES; ``EndpointEvent/portMappingChanged(_:)`` reports each change.
    public mutating func addPortMapping(gateway: NetworkAddress, localAddress: NetworkAddress, now: Instant) {
        let server = gateway.withPort(ProtocolLimits.portMappingServerPort)
        guard portMappingClients.count < ProtocolLimits.maxPortMappingGateways,
            !portMappingClients.contains(where: { $0.gateway == server })
        else { return }
        portMappingClients.append(
            PortMappingClient(gateway: gateway, localAddress: localAddress, nonce: random.bytes(count: 12), now: now))
    }

    /// Each gateway's port mapping as it stands.
    public var portMappings: [PortMapping] { portMappingClients.map(\.mapping) }

    /// Sets the port-mapped addresses the driver keeps by other means (UPnP-IGD, which needs TCP), at most
    /// ``ProtocolLimits/maxPortMappingGateways``: offered to peers first in CANDIDATES, after the endpoint's own PCP
    /// and NAT-PMP mappings.
    public mutating func setMappedAddresses(_ addresses: [NetworkAddress]) {
        let bounded = Array(addresses.prefix(ProtocolLimits.maxPortMappingGateways))
        guard bounded != mappedAddresses else { return }
        mappedAddresses = bounded
        candidatesChanged()
    }

    /// Deletes every port mapping at its gateway (one request each, queued for the next ``pollTransmit(into:now:)``)
    /// and stops asking: for a node that is closing.
    public mutating func releasePortMappings(now: Instant) {
        for index in portMappingClients.indices {
            let changed = portMappingClients[index].release(now: now)
            collectPortMappingOutput(index, changed: changed)
        }
    }

    mutating func handlePortMappingTimeouts(now: Instant) {
        for index in portMappingClients.indices {
            guard let deadline = portMappingClients[index].nextDeadline, deadline <= now else { continue }
            let changed = portMappingClients[index].handleTimeout(now: now)
            collectPortMappingOutput(index, changed: changed)
        }
    }

    mutating func handlePortMappingDatagram(_ datagram: UnsafeRawBufferPointer, from index: Int, now: Instant) {
        let dropped = portMappingClients[index].datagramsDropped
        let changed = portMappingClients[index].handle(datagram, now: now)
        statistics.portMappingDatagramsDropped += portMappingClients[index].datagramsDropped - dropped
        collectPortMappingOutput(index, changed: changed)
    }

    private mutating func collectPortMappingOutput(_ index: Int, changed: Bool) {
        let gateway = portMappingClients[index].gateway
        while let datagram = portMappingClients[index].pollTransmit() { outbox.append((.direct(gateway), datagram)) }
        guard changed else { return }
        if !portMappingChanges.contains(gateway) { portMappingChanges.append(gateway) }
        candidatesChanged()
    }
}
