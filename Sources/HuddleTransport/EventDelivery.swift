import DequeModule
import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Hands an endpoint's events to the consumer installed with ``UDPEndpointDriver/handleEvents(maxEvents:maxBytes:_:)``,
/// in batches, while it wants more: the driver's one way out for events.
///
/// Until a consumer is installed, and while it has said it wants no more, events stay in the endpoint: undelivered
/// messages there keep the peers' flow-control credit, so backpressure reaches the senders without a buffer here.
/// The driver's own reports of accepted messages that never reached the endpoint (``EndpointEvent/unsent(_:)``) go
/// out before the endpoint's events, one report per connection, peer and channel.
///
/// Not tied to a channel or an event loop: the handler calls it on its loop, a test calls it with a bare endpoint.
struct EventDelivery {
    /// The installed consumer, if any.
    private(set) var consumer: InstalledEventHandler?
    /// False from the consumer's returning `false` until it asks to resume.
    private var wantsMore = true
    /// Reports of accepted messages that never reached the endpoint, not yet handed out.
    private var unsentReports = Deque<UnsentMessages>()

    /// Whether reports of unsent messages wait to be handed out.
    var hasUnsentReports: Bool { !unsentReports.isEmpty }

    /// Installs `consumer`, which wants events from now on.
    mutating func install(_ consumer: InstalledEventHandler) {
        self.consumer = consumer
        wantsMore = true
    }

    /// The consumer asked for more; returns whether that changes anything (it had said it wanted no more).
    mutating func resume() -> Bool {
        guard consumer != nil, !wantsMore else { return false }
        wantsMore = true
        return true
    }

    /// Counts one unsent message of `bytes` bytes with `tag` into the report for its destination.
    mutating func reportUnsent(
        connection: ConnectionID?, peer: X25519PublicKey?, channel: ChannelID, bytes: Int, tag: UInt64
    ) {
        // One report per destination until handed out, so the list stays as small as the set of destinations even
        // while nobody takes events.
        if let index = unsentReports.firstIndex(where: {
            $0.connection == connection && $0.peer == peer && $0.channel == channel
        }) {
            unsentReports[index].count += 1
            unsentReports[index].bytes += bytes
            unsentReports[index].tags.append(tag)
        } else {
            unsentReports.append(
                UnsentMessages(
                    connection: connection, peer: peer, channel: channel, count: 1, bytes: bytes, tags: [tag]))
        }
    }

    /// Hands events to the consumer in batches of at most its event and byte limits while it wants more; returns
    /// how many it handed over. `closed` learns of every connection whose `.closed` event is taken, before the
    /// consumer does.
    mutating func deliver(
        from endpoint: inout Endpoint, now: Instant, closed: (ConnectionID) -> Void
    ) -> Int {
        guard let consumer else { return 0 }
        var delivered = 0
        while wantsMore {
            var batch: [EndpointEvent] = []
            var bytes = 0
            while batch.count < consumer.maxEvents, bytes < consumer.maxBytes,
                let event = next(from: &endpoint, closed: closed)
            {
                switch event {
                case .message(_, _, let payload), .datagram(_, _, let payload): bytes += payload.count
                default: break
                }
                batch.append(event)
            }
            if batch.isEmpty { break }
            delivered += batch.count
            wantsMore = consumer.body(batch, &endpoint, now)
        }
        return delivered
    }

    /// Hands every remaining event to the consumer in one batch whatever it wants (the driver is closing: the local
    /// `.closed` events are the last it gets); returns how many.
    mutating func deliverFinal(
        from endpoint: inout Endpoint, now: Instant, closed: (ConnectionID) -> Void
    ) -> Int {
        var batch: [EndpointEvent] = []
        while let event = next(from: &endpoint, closed: closed) { batch.append(event) }
        guard let consumer, !batch.isEmpty else { return 0 }
        _ = consumer.body(batch, &endpoint, now)
        return batch.count
    }

    /// The next event: reports of unsent messages first, then the endpoint's.
    private mutating func next(from endpoint: inout Endpoint, closed: (ConnectionID) -> Void) -> EndpointEvent? {
        if let report = unsentReports.popFirst() { return .unsent(report) }
        guard let event = endpoint.pollEvent() else { return nil }
        if case .closed(let id, _, _, _) = event { closed(id) }
        return event
    }
}
