/// A TURN server an endpoint allocates on: its UDP address and the long-term credentials it knows this node by.
public struct TurnServer: Hashable, Sendable {
    /// The server's UDP address.
    public var address: NetworkAddress
    /// The username and password.
    public var credentials: TurnCredentials

    /// A server at `address` with `credentials`.
    public init(address: NetworkAddress, credentials: TurnCredentials) {
        self.address = address
        self.credentials = credentials
    }
}
