/// Why a gateway gave this node no port mapping.
public enum PortMappingFailure: Sendable, Hashable, CustomStringConvertible {
    /// No port-mapping request was answered (PCP and NAT-PMP: ``ProtocolLimits/portMappingAttempts`` sends each;
    /// UPnP-IGD: no gateway answered the search, or it offers no WAN connection service): the router does not run
    /// them, or has them turned off.
    case unanswered
    /// The gateway answered with an error: the protocol and its result code (PCP: RFC 6887 19.4, for example
    /// 2 NOT_AUTHORIZED, 8 NO_RESOURCES; NAT-PMP: RFC 6886 3.5, for example 2 not authorized, 4 out of resources;
    /// UPnP-IGD: the SOAP fault's errorCode, for example 606 action not authorized, 718 conflict, or the HTTP
    /// status when there was no fault).
    case refused(PortMappingProtocol, resultCode: Int)
    /// The gateway answered with success but granted nothing usable: external port 0, no lifetime, or the address
    /// 0.0.0.0 (a NAT-PMP gateway without an external address yet).
    case unusableGrant(PortMappingProtocol)

    /// A sentence for logs and the CLI.
    public var description: String {
        switch self {
        case .unanswered: "the gateway answered no port-mapping request"
        case .refused(let method, let code): "the gateway refused the \(method) mapping (result code \(code))"
        case .unusableGrant(let method): "the gateway's \(method) answer granted no usable address, port or lifetime"
        }
    }
}
