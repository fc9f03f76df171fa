extension ProtocolLimits {
    /// The UDP port PCP and NAT-PMP servers listen on (RFC 6887 19.1, RFC 6886 3.1).
    public static let portMappingServerPort: UInt16 = 5351
    /// Gateways an endpoint asks for a port mapping at once; more are ignored.
    public static let maxPortMappingGateways = 2
    /// The lifetime a mapping is asked for (RFC 6886's recommendation); gateways may grant less.
    public static let portMappingLifetime: UInt32 = 7200
    /// A mapping is renewed at half its granted lifetime, or after this long if sooner: a router that restarted and
    /// lost it gets it back within this long.
    public static let portMappingRenewInterval: Duration = .seconds(300)
    /// The first retransmission timeout of a PCP or NAT-PMP request, doubling on each retry (RFC 6886 3.1's 250 ms; a
    /// gateway on the LAN answers in a millisecond, and a node starting waits for the first answer).
    public static let portMappingInitialRetransmission: Duration = .milliseconds(250)
    /// Sends of each protocol's request (at 0, 0.25 and 0.75 s) before the next protocol, or the failure.
    public static let portMappingAttempts = 3
    /// After a gateway answered neither protocol or refused, it is asked again this long later.
    public static let portMappingRetryInterval: Duration = .seconds(600)
}
