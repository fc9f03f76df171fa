/// Where one gateway's port mapping for this node stands (``Endpoint/portMappings``).
public struct PortMapping: Sendable, Hashable {
    /// The gateway asked, at ``ProtocolLimits/portMappingServerPort``.
    public var gateway: NetworkAddress
    /// The public address the gateway forwards to this node's socket, once mapped: offered to peers first.
    public var externalAddress: NetworkAddress?
    /// The protocol that mapped it.
    public var mappingProtocol: PortMappingProtocol?
    /// How long the gateway keeps the mapping unless renewed (it is renewed at half this, or sooner).
    public var lifetime: Duration?
    /// Why there is no mapping, when the gateway refused or never answered.
    public var failure: PortMappingFailure?
}
