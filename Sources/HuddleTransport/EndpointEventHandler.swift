import HuddleProtocol

/// Takes a ``UDPEndpointDriver``'s events on its event loop: the driver's one way out for events (see
/// ``UDPEndpointDriver/handleEvents(maxEvents:maxBytes:_:)``).
///
/// Called after every input with the events that are available, in order (at most the configured number of events and
/// message bytes per call, and again while more are available), with exclusive access to the endpoint (to react at
/// once, for example by sending) and the current instant. Returns whether it wants more now: after `false` the driver
/// takes no more events from the endpoint, so undelivered messages stay there and withhold flow-control credit from
/// the peers (backpressure), until ``UDPEndpointDriver/resumeEvents()``.
///
/// Runs on the event loop: it must not block, and must not wait for anything the event loop does.
public typealias EndpointEventHandler =
    @Sendable (
        _ events: [EndpointEvent], _ endpoint: inout Endpoint, _ now: Instant
    ) -> Bool

/// An installed ``EndpointEventHandler`` with its batch limits.
struct InstalledEventHandler {
    let body: EndpointEventHandler
    let maxEvents: Int
    let maxBytes: Int
}
