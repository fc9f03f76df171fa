/// The router protocol a port mapping was asked with.
public enum PortMappingProtocol: String, Sendable, Hashable, CustomStringConvertible {
    /// The Port Control Protocol (RFC 6887), asked first.
    case pcp
    /// NAT Port Mapping Protocol (RFC 6886), asked when the gateway does not answer PCP or says it speaks only this.
    case natPMP = "nat-pmp"

    /// The protocol's name as the CLI's JSON prints it: `pcp` or `nat-pmp`.
    public var description: String { rawValue }
}
