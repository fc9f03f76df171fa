import HuddleProtocol
import HuddleTransport

extension HuddleNode {
    /// Where each home router's port mapping for this node stands (``Configuration/portMapping``), one per router:
    /// the mapped public address and the protocol that mapped it (PCP, NAT-PMP or UPnP-IGD), or why there is none.
    /// Empty when no router was asked.
    public func portMappings() async -> [PortMapping] {
        engine.portMappings.current
    }

    /// Where every port mapping stands (as ``portMappings()`` says), then the list again after each change: mapped,
    /// moved to another address, refused, unanswered. An observer that falls behind sees only the newest list; the
    /// stream ends at ``shutdown()``.
    public func portMappingChanges() -> AsyncStream<[PortMapping]> {
        engine.portMappings.updates.stream()
    }

    /// Asks each home gateway the socket bound at `bound` can use for a port mapping, over PCP / NAT-PMP (the
    /// endpoint's clients) and UPnP-IGD (a mapper each) at once, and when `waits`, waits up to ``portMappingWait`` for
    /// the first mapping. Returns the mapped addresses so far and the UPnP mappers (to release at shutdown). Nothing is asked
    /// for a socket bound to an IPv6 address or to an address other than the one toward the gateway.
    static func startPortMapping(
        driver: UDPEndpointDriver, bound: NetworkAddress, report: PortMappingReport, waits: Bool
    ) async -> (mapped: [NetworkAddress], upnp: [UPnPPortMapper]) {
        // A socket on `::` is dual-stack: it reaches an IPv4 gateway, and the mapping forwards IPv4 to it.
        let unspecified = bound.addressBytes.allSatisfy { $0 == 0 }
        guard bound.family == .ipv4 || unspecified else { return ([], []) }
        let gateways = HomeGateway.discover().filter {
            unspecified || bound.addressBytes == $0.localAddress.addressBytes
        }
        guard !gateways.isEmpty else { return ([], []) }
        try? await driver.perform { endpoint, now in
            for gateway in gateways {
                endpoint.addPortMapping(
                    gateway: gateway.address, localAddress: gateway.localAddress.withPort(bound.port), now: now)
            }
        }
        let mappers = gateways.map {
            UPnPPortMapper(gateway: $0.address, localAddress: $0.localAddress.withPort(bound.port))
        }
        for mapper in mappers {
            let gateway = mapper.gateway.addressBytes
            mapper.start(
                otherMapped: {
                    // A closed driver counts as mapped: a node that is stopping asks for nothing more.
                    (try? await driver.perform { endpoint, _ in
                        endpoint.portMappings.contains {
                            $0.gateway.addressBytes == gateway && $0.externalAddress != nil
                        }
                    }) ?? true
                },
                changed: { mapping in
                    report.upnpChanged(mapping)
                    let addresses = mappers.compactMap(\.mapping.externalAddress)
                    driver.execute { endpoint, _ in endpoint.setMappedAddresses(addresses) }
                })
        }
        return (waits ? await awaitPortMappings(driver, upnp: mappers) : [], mappers)
    }

    /// The mapped addresses (PCP / NAT-PMP first, then UPnP-IGD) once one gateway mapped or every one gave up,
    /// or after ``portMappingWait``. Checked every 10 ms, once, at start, like ``awaitStunAnswers(_:)``.
    static func awaitPortMappings(_ driver: UDPEndpointDriver, upnp: [UPnPPortMapper]) async -> [NetworkAddress] {
        let deadline = ContinuousClock.now + portMappingWait
        var all: [PortMapping] = []
        repeat {
            let endpoint = (try? await driver.perform { endpoint, _ in endpoint.portMappings }) ?? []
            all = endpoint + upnp.map(\.mapping)
            if all.contains(where: { $0.externalAddress != nil }) || all.allSatisfy(\.isSettled) { break }
            try? await Task.sleep(for: .milliseconds(10))
        } while ContinuousClock.now < deadline
        var mapped: [NetworkAddress] = []
        for case let address? in all.map(\.externalAddress) where !mapped.contains(address) { mapped.append(address) }
        return mapped
    }
}
