import HuddleProtocol

/// A datagram a node wants sent.
public struct SimulatedTransmit: Sendable {
    /// Where it goes.
    public var destination: NetworkAddress
    /// Its bytes.
    public var datagram: [UInt8]

    /// A transmit of `datagram` to `destination`.
    public init(destination: NetworkAddress, datagram: [UInt8]) {
        self.destination = destination
        self.datagram = datagram
    }
}

/// Anything with the protocol core's handle/poll shape can run inside a ``SimulatedNetwork``.
///
/// The network calls `handle(datagram:from:now:)` for each arriving datagram and `handleTimeout(now:)` when
/// `nextDeadline` passes, then drains `pollTransmit(now:)` until it returns `nil`. Nodes never see real time.
public protocol SimulatedNode {
    /// Processes one arriving datagram.
    mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant)
    /// Processes datagrams that arrived together (one read batch of a busy event loop), in order.
    mutating func handle(datagrams: [(bytes: [UInt8], source: NetworkAddress)], now: Instant)
    /// Processes timers that are due at `now`.
    mutating func handleTimeout(now: Instant)
    /// The next datagram to send, or `nil` when there is nothing (more) to send now.
    mutating func pollTransmit(now: Instant) -> SimulatedTransmit?
    /// When the node next needs `handleTimeout(now:)`, if ever. It changes nothing; it is `mutating` so a node can
    /// ask its endpoint in place (``Endpoint/nextDeadline``): the network asks after every step, and reading
    /// a node out of its slot or a connection through a getter copied them (about 15 % of a churn run's time).
    var nextDeadline: Instant? { mutating get }
    /// A description of the node's timers, printed when it livelocks.
    var diagnostics: String { get }
}

extension SimulatedNode {
    /// Each datagram on its own, by default.
    public mutating func handle(datagrams: [(bytes: [UInt8], source: NetworkAddress)], now: Instant) {
        for datagram in datagrams { handle(datagram: datagram.bytes, from: datagram.source, now: now) }
    }

    /// No diagnostics by default.
    public var diagnostics: String { "" }
}
