/// A TURN server an endpoint allocates on: its address, the transport to it and the long-term credentials it knows
/// this node by.
///
/// A TCP server given together with a UDP one is a fallback: it stands by while a UDP allocation works, and is used
/// when none is granted within ``ProtocolLimits/turnStreamFallbackDelay`` (UDP blocked on the way out).
public struct TurnServer: Hashable, Sendable {
    /// The server's address.
    public var address: NetworkAddress
    /// UDP (the default) or TCP.
    public var transport: TurnTransport
    /// The username and password.
    public var credentials: TurnCredentials

    /// A server at `address`, reached over `transport`, with `credentials`.
    public init(address: NetworkAddress, transport: TurnTransport = .udp, credentials: TurnCredentials) {
        self.address = address
        self.transport = transport
        self.credentials = credentials
    }

    /// The address and transport together.
    public var serverAddress: TurnServerAddress { TurnServerAddress(address, transport: transport) }
}
