import HuddleProtocol

/// A NAT router in front of one simulated node: it rewrites the node's source address to a public one and admits
/// inbound datagrams only from addresses the node sent to from that mapping (address-and-port-dependent filtering,
/// as Linux conntrack does).
///
/// ``Mapping-swift.enum/endpointIndependent`` keeps one public port for every destination (a "cone" NAT: what a peer
/// and a relay see is the same address); ``Mapping-swift.enum/endpointDependent`` takes a new port per destination
/// (a "symmetric" NAT, like `masquerade random,fully-random`). ``rebind()`` forgets every mapping, as a router that
/// restarts or expires a flow does.
public struct SimulatedNAT: Sendable {
    /// How the NAT picks the public port.
    public enum Mapping: Sendable {
        /// One public port per inside socket, whatever the destination.
        case endpointIndependent
        /// A new public port for each destination.
        case endpointDependent
    }

    /// How the NAT maps.
    public let mapping: Mapping
    /// The public IPv4 address.
    public let publicAddress: (UInt8, UInt8, UInt8, UInt8)
    private var nextPort: UInt16
    /// Public port per destination (`nil` key: the one port of an endpoint-independent NAT).
    private var ports: [NetworkAddress?: UInt16] = [:]
    /// Per public port, the addresses the inside sent to (only they get in).
    private var permissions: [UInt16: Set<NetworkAddress>] = [:]
    /// Times ``rebind()`` was called.
    public private(set) var rebindings = 0

    /// A NAT with `mapping` at public address `publicAddress`, handing out ports from `firstPort`.
    public init(mapping: Mapping, publicAddress: (UInt8, UInt8, UInt8, UInt8), firstPort: UInt16 = 40_000) {
        self.mapping = mapping
        self.publicAddress = publicAddress
        self.nextPort = firstPort
    }

    /// Whether `address` is on this NAT's public IP (any port).
    public func owns(_ address: NetworkAddress) -> Bool {
        let bytes = address.addressBytes
        return address.family == .ipv4 && bytes == [publicAddress.0, publicAddress.1, publicAddress.2, publicAddress.3]
    }

    /// The public source address of a datagram the inside sends to `destination`, creating the mapping and the
    /// permission for replies from `destination`.
    mutating func translate(to destination: NetworkAddress) -> NetworkAddress {
        let key: NetworkAddress? = mapping == .endpointIndependent ? nil : destination
        let port: UInt16
        if let existing = ports[key] {
            port = existing
        } else {
            port = nextPort
            nextPort &+= 1
            ports[key] = port
        }
        permissions[port, default: []].insert(destination)
        return NetworkAddress(ipv4: publicAddress.0, publicAddress.1, publicAddress.2, publicAddress.3, port: port)
    }

    /// Whether a datagram from `source` to public port `port` gets through to the inside.
    func admits(from source: NetworkAddress, toPort port: UInt16) -> Bool {
        permissions[port]?.contains(source) ?? false
    }

    /// Forgets every mapping: the inside's next datagrams leave from new ports, and replies to the old ones are
    /// dropped.
    public mutating func rebind() {
        ports = [:]
        permissions = [:]
        rebindings += 1
    }
}
