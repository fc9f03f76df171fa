/// A TURN server as a client reaches it: its address and the transport to it. Two clients may use one server over
/// UDP and over TCP at the same address and port; this tells them (and their routes) apart.
public struct TurnServerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The server's address.
    public var address: NetworkAddress
    /// UDP or TCP.
    public var transport: TurnTransport

    /// The server at `address` over `transport`.
    public init(_ address: NetworkAddress, transport: TurnTransport) {
        self.address = address
        self.transport = transport
    }

    /// The bytes a cookie binds to: the address, and a byte naming the transport.
    var canonicalBytes: [UInt8] { address.canonicalBytes + [transport == .udp ? 0 : 1] }

    /// `IP:port` over UDP, `IP:port/tcp` over TCP.
    public var description: String { transport == .udp ? "\(address)" : "\(address)/\(transport)" }
}
