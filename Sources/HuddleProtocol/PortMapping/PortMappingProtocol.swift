/// The router protocol a port mapping was asked with.
public enum PortMappingProtocol: String, Sendable, Hashable, CustomStringConvertible {
    /// The Port Control Protocol (RFC 6887), asked first.
    case pcp
    /// NAT Port Mapping Protocol (RFC 6886), asked when the gateway does not answer PCP or says it speaks only this.
    case natPMP = "nat-pmp"
    /// UPnP-IGD's WANIPConnection service (SSDP, HTTP and SOAP), which most home routers answer. The core does not
    /// speak it (it needs TCP); the `Huddle` layer's node does, next to PCP and NAT-PMP.
    case upnp

    /// The protocol's name as the CLI's JSON prints it: `pcp`, `nat-pmp` or `upnp`.
    public var description: String { rawValue }
}
