import HuddleProtocol
import NIOConcurrencyHelpers

/// Where the node's port mappings stand, one per gateway, merged from the two places that keep them: the
/// endpoint's PCP / NAT-PMP clients and the node's UPnP-IGD mapper. ``HuddleNode/portMappings()`` reads it and
/// ``HuddleNode/portMappingChanges()`` streams it.
///
/// Per gateway: a UPnP mapping if there is one, else the PCP / NAT-PMP entry; a failure only once both have given
/// up (an error answer preferred to silence, which says less).
final class PortMappingReport: Sendable {
    /// The merged list after each change.
    let updates = Broadcast<[PortMapping]>([])
    private let sources = NIOLockedValueBox<(endpoint: [PortMapping], upnp: [PortMapping])>(([], []))

    /// The merged list now.
    var current: [PortMapping] { sources.withLockedValue { Self.merge(endpoint: $0.endpoint, upnp: $0.upnp) } }

    /// The endpoint's mappings changed (read on the event loop).
    func endpointChanged(_ mappings: [PortMapping]) {
        publish { $0.endpoint = mappings }
    }

    /// A UPnP mapper's mapping changed.
    func upnpChanged(_ mapping: PortMapping) {
        publish { sources in
            sources.upnp.removeAll { $0.gateway == mapping.gateway }
            sources.upnp.append(mapping)
        }
    }

    /// Ends every stream.
    func finish() { updates.finish() }

    private func publish(_ change: (inout (endpoint: [PortMapping], upnp: [PortMapping])) -> Void) {
        // Under the lock, so two sources changing at once cannot publish out of order.
        sources.withLockedValue { sources in
            change(&sources)
            updates.update(Self.merge(endpoint: sources.endpoint, upnp: sources.upnp))
        }
    }

    /// One entry per gateway address, in the endpoint's order, then gateways only UPnP knows.
    static func merge(endpoint: [PortMapping], upnp: [PortMapping]) -> [PortMapping] {
        var merged: [PortMapping] = []
        var seen: [[UInt8]] = []
        for entry in endpoint + upnp {
            let address = entry.gateway.addressBytes
            guard !seen.contains(address) else { continue }
            seen.append(address)
            let pcp = endpoint.first { $0.gateway.addressBytes == address }
            let other = upnp.first { $0.gateway.addressBytes == address }
            merged.append(choose(pcp: pcp, upnp: other))
        }
        return merged
    }

    private static func choose(pcp: PortMapping?, upnp: PortMapping?) -> PortMapping {
        guard let pcp else { return upnp! }
        guard let upnp else { return pcp }
        if upnp.externalAddress != nil { return upnp }
        if pcp.externalAddress != nil { return pcp }
        // Neither mapped: a failure only once both gave up, and an answer over silence.
        guard let pcpFailure = pcp.failure, let upnpFailure = upnp.failure else {
            return PortMapping(gateway: pcp.gateway)
        }
        return pcpFailure == .unanswered && upnpFailure != .unanswered ? upnp : pcp
    }
}
