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

    /// A mapping's state; with only `gateway`, nothing known yet.
    public init(
        gateway: NetworkAddress, externalAddress: NetworkAddress? = nil, mappingProtocol: PortMappingProtocol? = nil,
        lifetime: Duration? = nil, failure: PortMappingFailure? = nil
    ) {
        self.gateway = gateway
        self.externalAddress = externalAddress
        self.mappingProtocol = mappingProtocol
        self.lifetime = lifetime
        self.failure = failure
    }

    /// Whether the gateway has settled: mapped, or failed.
    public var isSettled: Bool { externalAddress != nil || failure != nil }
}
