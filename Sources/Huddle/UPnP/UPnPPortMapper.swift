import HuddleProtocol
import NIOConcurrencyHelpers

/// Keeps a UDP port mapping for the node's socket on the home router over UPnP-IGD, the protocol most home routers
/// answer when PCP and NAT-PMP are off: an SSDP search for the Internet Gateway Device, its description, then SOAP
/// `AddPortMapping` and `GetExternalIPAddress` on its WAN connection service.
///
/// It runs beside the endpoint's PCP / NAT-PMP client (``HuddleProtocol/PortMappingClient``) and maps only when
/// that one has not: a router answering both keeps one mapping. A mapping is asked for 7200 s
/// (`ProtocolLimits.portMappingLifetime`; a router that takes only permanent ones, error 725, gets a permanent one),
/// renewed like PCP's (at half the lease, at most every 300 s), and deleted by ``release()``. Every exchange is
/// bounded (1 s for the search, 2 s per HTTP request) and talks to the gateway only.
///
/// This is the one part of port mapping outside the sans-IO core: it needs TCP. Its timer is a task's sleep
/// between renewals, as the metrics sampling is, not a core deadline.
final class UPnPPortMapper: Sendable {
    /// The gateway's SSDP address (port 1900), which ``PortMapping/gateway`` names for this mapping.
    let gateway: NetworkAddress
    /// This node's address toward the gateway, with the socket's port: the mapping's internal client and port.
    let localAddress: NetworkAddress

    private struct State {
        var mapping: PortMapping
        var control: UPnPMessages.ControlPoint?
        var task: Task<Void, Never>?
        var released = false
    }

    private let state: NIOLockedValueBox<State>

    /// How long the search waits for the gateway's answer.
    static let searchTimeout: Duration = .seconds(1)
    /// How long one HTTP request (description or SOAP action) may take.
    static let requestTimeout: Duration = .seconds(2)
    /// How long ``release()`` waits for the deletion.
    static let releaseTimeout: Duration = .seconds(1)
    /// The description every mapping carries (routers list it).
    static let mappingDescription = "huddle"

    init(gateway: NetworkAddress, localAddress: NetworkAddress) {
        self.gateway = gateway.withPort(UPnPExchange.ssdpGroup.port)
        self.localAddress = localAddress
        state = NIOLockedValueBox(State(mapping: PortMapping(gateway: self.gateway)))
    }

    /// The mapping as it stands.
    var mapping: PortMapping { state.withLockedValue { $0.mapping } }

    /// Starts mapping, and renewing, until ``release()``. `otherMapped` says whether PCP or NAT-PMP already mapped
    /// the port (then this one does not); `changed` hears each new state.
    func start(
        otherMapped: @escaping @Sendable () async -> Bool, changed: @escaping @Sendable (PortMapping) -> Void
    ) {
        let task = Task { [self] in
            while !Task.isCancelled {
                let wait = await attempt(otherMapped: otherMapped, changed: changed)
                try? await Task.sleep(for: wait)
            }
        }
        state.withLockedValue { $0.task = task }
    }

    /// Stops renewing and deletes the mapping at the gateway. A round in flight is waited for (it checks for the
    /// release before each request, and deletes a mapping it made meanwhile), so no mapping outlives the node: at
    /// most one request's ``requestTimeout`` and one deletion's ``releaseTimeout``.
    func release() async {
        let task = state.withLockedValue { state in
            state.released = true
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
        let (control, external) = state.withLockedValue { ($0.control, $0.mapping.externalAddress) }
        guard let control, let external else { return }
        await delete(external, control: control)
    }

    private var isReleased: Bool { state.withLockedValue { $0.released } }

    private func delete(_ external: NetworkAddress, control: UPnPMessages.ControlPoint) async {
        let request = UPnPMessages.soapRequest(
            "DeletePortMapping",
            arguments: [("NewRemoteHost", ""), ("NewExternalPort", "\(external.port)"), ("NewProtocol", "UDP")],
            control: control, gateway: gateway.addressBytes)
        let host = gateway.addressBytes
        _ = await UPnPExchange.run {
            UPnPExchange.http(request, host: host, port: control.port, timeout: Self.releaseTimeout)
        }
    }

    /// One round: find the gateway's service if not known yet, map (or renew), learn the external address.
    /// Returns how long to wait before the next round.
    private func attempt(
        otherMapped: @Sendable () async -> Bool, changed: @Sendable (PortMapping) -> Void
    ) async -> Duration {
        let retry = ProtocolLimits.portMappingRetryInterval
        let gatewayBytes = gateway.addressBytes
        var control = state.withLockedValue { $0.control }
        if control == nil {
            let local = localAddress.addressBytes
            let location = await UPnPExchange.run {
                UPnPExchange.search(gateway: gatewayBytes, localAddress: local, timeout: Self.searchTimeout)
            }
            guard let location, let url = UPnPMessages.gatewayURL(location, gateway: gatewayBytes) else {
                return settle(.failure(.unanswered), changed: changed, retry: retry)
            }
            let request = UPnPMessages.getRequest(url.path, port: url.port, gateway: gatewayBytes)
            let description = await UPnPExchange.run {
                UPnPExchange.http(request, host: gatewayBytes, port: url.port, timeout: Self.requestTimeout)
            }
            guard let description, description.status == 200,
                let found = UPnPMessages.controlPoint(
                    description: description.body, descriptionPort: url.port, gateway: gatewayBytes)
            else {
                return settle(.failure(.unanswered), changed: changed, retry: retry)
            }
            control = found
            state.withLockedValue { $0.control = found }
        }
        guard let control else { return retry }
        // PCP or NAT-PMP mapped first (a router running all three answers PCP within milliseconds): one mapping
        // is enough. Asked again at the next round, in case that one is lost.
        if mapping.externalAddress == nil, await otherMapped() { return retry }
        let outcome = await map(control: control)
        switch outcome {
        case .mapped(let external, _) where isReleased:
            // Released while the request was on its way: nobody will delete this one but us.
            await delete(external, control: control)
            return retry
        case .mapped(let external, let lease):
            let renew =
                lease == 0
                ? ProtocolLimits.portMappingRenewInterval
                : min(.seconds(lease) / 2, ProtocolLimits.portMappingRenewInterval)
            return settle(.mapped(external, lease: lease), changed: changed, retry: renew)
        case .failure(let failure):
            return settle(.failure(failure), changed: changed, retry: retry)
        }
    }

    private enum Outcome {
        case mapped(NetworkAddress, lease: UInt32)
        case failure(PortMappingFailure)
    }

    /// `AddPortMapping` (the same external port as before, or the socket's; another port when the router reports a
    /// conflict; a permanent lease when it takes only those), then `GetExternalIPAddress`.
    private func map(control: UPnPMessages.ControlPoint) async -> Outcome {
        var external = mapping.externalAddress?.port ?? localAddress.port
        var lease = ProtocolLimits.portMappingLifetime
        for _ in 0..<4 {
            guard !isReleased else { return .failure(.unanswered) }
            let response = await soap(
                "AddPortMapping",
                [
                    ("NewRemoteHost", ""), ("NewExternalPort", "\(external)"), ("NewProtocol", "UDP"),
                    ("NewInternalPort", "\(localAddress.port)"),
                    ("NewInternalClient", localAddress.addressBytes.map(String.init).joined(separator: ".")),
                    ("NewEnabled", "1"), ("NewPortMappingDescription", Self.mappingDescription),
                    ("NewLeaseDuration", "\(lease)"),
                ], control: control)
            guard let response else { return .failure(.unanswered) }
            if response.status == 200 { return await externalAddress(port: external, lease: lease, control: control) }
            switch UPnPMessages.errorCode(in: response.body) {
            // 725 OnlyPermanentLeasesSupported; 718 ConflictInMappingEntry and 729 ConflictWithOtherMechanisms: the
            // port is someone else's.
            case 725?:
                lease = 0
            case 718?, 729?:
                external = UInt16.random(in: 1024...65535)
            case let code?:
                return .failure(.refused(.upnp, resultCode: code))
            case nil:
                return .failure(.refused(.upnp, resultCode: response.status))
            }
        }
        return .failure(.refused(.upnp, resultCode: 718))
    }

    private func externalAddress(port: UInt16, lease: UInt32, control: UPnPMessages.ControlPoint) async -> Outcome {
        let response = await soap("GetExternalIPAddress", [], control: control)
        guard let response, response.status == 200 else { return .failure(.unanswered) }
        let octets = UPnPMessages.element("NewExternalIPAddress", in: response.body)?.split(separator: ".")
            .compactMap { UInt8($0) }
        guard let octets, octets.count == 4, octets != [0, 0, 0, 0] else { return .failure(.unusableGrant(.upnp)) }
        return .mapped(NetworkAddress(ipv4: octets[0], octets[1], octets[2], octets[3], port: port), lease: lease)
    }

    private func soap(
        _ action: String, _ arguments: [(String, String)], control: UPnPMessages.ControlPoint
    ) async -> UPnPExchange.Response? {
        let gatewayBytes = gateway.addressBytes
        let request = UPnPMessages.soapRequest(action, arguments: arguments, control: control, gateway: gatewayBytes)
        return await UPnPExchange.run {
            UPnPExchange.http(request, host: gatewayBytes, port: control.port, timeout: Self.requestTimeout)
        }
    }

    /// Records `outcome` as the mapping (unless released meanwhile), tells `changed` when it differs, and returns
    /// `retry`.
    private func settle(_ outcome: Outcome, changed: @Sendable (PortMapping) -> Void, retry: Duration) -> Duration {
        let next: PortMapping
        switch outcome {
        case .mapped(let external, let lease):
            next = PortMapping(
                gateway: gateway, externalAddress: external, mappingProtocol: .upnp,
                lifetime: lease == 0 ? nil : .seconds(lease), failure: nil)
        case .failure(let failure):
            next = PortMapping(
                gateway: gateway, externalAddress: nil, mappingProtocol: nil, lifetime: nil, failure: failure)
        }
        let isNews = state.withLockedValue { state -> Bool in
            guard !state.released, state.mapping != next else { return false }
            state.mapping = next
            return true
        }
        if isNews { changed(next) }
        return retry
    }
}
