import HuddleProtocol
import NIOCore

/// The events of a ``UDPEndpointDriver``'s endpoint (connected, message, datagram, delivered, closed), in order per
/// connection, with backpressure.
///
/// Single consumer: iterate it from one task only (a second iterator traps). Up to
/// ``TransportConfiguration/eventBufferHighWatermark`` events wait for a slow consumer; past that the driver stops
/// taking events from the endpoint. Nothing is dropped: undelivered messages stay in the endpoint and hold the
/// connection's flow-control credit, so the peer's sends suspend until the consumer catches up, while ACKs and
/// timers keep running. The sequence ends after ``UDPEndpointDriver/close()`` (or a channel failure) once the events
/// already taken have been consumed, and at once when a handler is installed with
/// ``UDPEndpointDriver/handleEvents(maxEvents:maxBytes:_:)`` (events then go there). If the consumer stops iterating
/// for good, later events are discarded and counted in ``TransportStatistics/eventsDiscarded``.
///
/// Besides the endpoint's own events it carries the driver's reports of queued messages that never reached the
/// endpoint (`EndpointEvent.unsent`, see ``UDPEndpointDriver/enqueue(_:on:to:)``).
public struct EndpointEvents: AsyncSequence, Sendable {
    /// Every event is an ``EndpointEvent``.
    public typealias Element = EndpointEvent

    typealias Producer = NIOAsyncSequenceProducer<
        EndpointEvent, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, EventDemandDelegate
    >

    let producer: Producer

    /// The iterator (not to be shared across tasks).
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: Producer.AsyncIterator

        /// The next event, or `nil` once the driver is closed and every event was consumed (or the task was
        /// cancelled).
        public mutating func next() async -> EndpointEvent? {
            await base.next()
        }
    }

    /// The iterator; call once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: producer.makeAsyncIterator())
    }
}
