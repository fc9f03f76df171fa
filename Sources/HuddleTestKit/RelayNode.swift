import HuddleCrypto
import HuddleProtocol

/// A ``RelayServer`` running inside a ``SimulatedNetwork``.
public struct RelayNode: SimulatedNode {
    /// The relay under test.
    public var relay: RelayServer
    private var forwards: [(NetworkAddress, [UInt8])] = []

    /// A relay node with its identity and token secret drawn from `seed`.
    public init(seed: UInt64, configure: (inout RelayServerConfiguration) -> Void = { _ in }) {
        var random = ChaChaRandomGenerator(seed: seed)
        var configuration = RelayServerConfiguration(identity: Identity(using: &random))
        configure(&configuration)
        relay = RelayServer(configuration: configuration, generator: &random)
    }

    public mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        var bytes = datagram
        let destination = bytes.withUnsafeMutableBytes { relay.handle(datagram: $0, from: source, now: now) }
        if let destination { forwards.append((destination, bytes)) }
    }

    public mutating func handleTimeout(now: Instant) {}

    public mutating func pollTransmit(now: Instant) -> SimulatedTransmit? {
        if !forwards.isEmpty {
            let (destination, datagram) = forwards.removeFirst()
            return SimulatedTransmit(destination: destination, datagram: datagram)
        }
        return relay.pollTransmit().map { SimulatedTransmit(destination: $0.destination, datagram: $0.datagram) }
    }

    public var nextDeadline: Instant? { nil }
}

/// A node of a traversal test: an endpoint (usually behind a ``SimulatedNAT``) or a relay. (A struct of two
/// optionals rather than an enum: an enum's payload is copied out to be mutated, and the endpoint's buffers with it.)
public struct TraversalNode: SimulatedNode {
    /// The endpoint node, if this is one.
    public var endpointNode: EndpointNode?
    /// The relay node, if this is one.
    public var relayNode: RelayNode?

    /// An endpoint node.
    public static func endpoint(_ node: EndpointNode) -> TraversalNode { TraversalNode(endpointNode: node) }

    /// A relay node.
    public static func relay(_ node: RelayNode) -> TraversalNode { TraversalNode(relayNode: node) }

    public mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        endpointNode?.handle(datagram: datagram, from: source, now: now)
        relayNode?.handle(datagram: datagram, from: source, now: now)
    }

    public mutating func handleTimeout(now: Instant) {
        endpointNode?.handleTimeout(now: now)
        relayNode?.handleTimeout(now: now)
    }

    public mutating func pollTransmit(now: Instant) -> SimulatedTransmit? {
        endpointNode?.pollTransmit(now: now) ?? relayNode?.pollTransmit(now: now)
    }

    public var nextDeadline: Instant? { mutating get { endpointNode?.nextDeadline ?? relayNode?.nextDeadline } }

    public var diagnostics: String { endpointNode?.diagnostics ?? "relay" }
}
