import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire

/// A session member inside a ``SimulatedNetwork``: an ``Endpoint`` driven through a ``SessionCore``, recording
/// every session event so tests can check membership, activity convergence and message delivery.
public struct SessionNode: SessionMemberNode {
    /// The protocol core.
    public var endpoint: Endpoint
    /// The session layer, absent until the node starts or joins a session.
    public var core: SessionCore?
    /// Every session event, with the time it happened.
    public private(set) var events: [(time: Instant, event: SessionEvent)] = []
    /// Removes and returns the events recorded so far (long runs consume them as they go, so memory stays flat).
    public mutating func takeEvents() -> [(time: Instant, event: SessionEvent)] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    /// The latest time the node saw.
    public private(set) var now = Instant.zero

    /// A node around `endpoint`, not yet in a session.
    public init(endpoint: Endpoint) {
        self.endpoint = endpoint
    }

    /// Starts (or joins) the session `membership` describes.
    public mutating func start(_ membership: SessionMembership, now: Instant) {
        var core = SessionCore(membership: membership)
        core.flush(&endpoint, now: now)
        self.core = core
        drain(now: now)
    }

    /// Runs a local membership operation.
    public mutating func update(now: Instant, _ body: (inout SessionMembership) -> Void) {
        guard var core else { return }
        core.update(&endpoint, now: now, body)
        self.core = core
        drain(now: now)
    }

    public mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        endpoint.handle(datagram: datagram, from: source, now: now)
        drain(now: now)
    }

    public mutating func handleTimeout(now: Instant) {
        endpoint.handleTimeout(now: now)
        if var core {
            core.handleTimeout(endpoint: &endpoint, now: now)
            self.core = core
        }
        drain(now: now)
    }

    public mutating func pollTransmit(now: Instant) -> SimulatedTransmit? {
        guard let (destination, datagram) = endpoint.pollTransmit(now: now) else { return nil }
        return SimulatedTransmit(destination: destination, datagram: datagram)
    }

    public var nextDeadline: Instant? {
        mutating get { Instant.earliest(endpoint.nextDeadline, core?.nextDeadline) }
    }

    private mutating func drain(now: Instant) {
        self.now = now
        while let event = endpoint.pollEvent() {
            guard var core else { continue }
            core.handle(event, endpoint: &endpoint, now: now)
            self.core = core
        }
        guard var core else { return }
        while let event = core.pollEvent() { events.append((now, event)) }
        self.core = core
    }

    /// Application messages received, in order, as (sender, bytes).
    public var messages: [(sender: X25519PublicKey, bytes: [UInt8])] {
        events.compactMap { entry in
            if case .message(let from, _, let bytes) = entry.event { return (from.staticKey, bytes) }
            return nil
        }
    }
}
