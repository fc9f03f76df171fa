import NIOConcurrencyHelpers
import NIOCore

/// Carries the event consumer's demand back to the driver's event loop: ``produceMore()`` when the buffered events
/// fall below the low watermark, ``didTerminate()`` when the consumer goes away.
///
/// The async-sequence machinery calls these from the consumer's thread; both only hop to the event loop.
final class EventDemandDelegate: NIOAsyncSequenceProducerDelegate, Sendable {
    private let handler = NIOLockedValueBox<NIOLoopBound<EndpointChannelHandler>?>(nil)

    /// Connects the delegate to the handler it wakes (once, right after the channel is bound).
    func attach(_ handler: NIOLoopBound<EndpointChannelHandler>) {
        self.handler.withLockedValue { $0 = handler }
    }

    func produceMore() {
        guard let bound = handler.withLockedValue({ $0 }) else { return }
        bound.eventLoop.execute { bound.value.eventDemandResumed() }
    }

    func didTerminate() {
        guard let bound = handler.withLockedValue({ $0 }) else { return }
        bound.eventLoop.execute { bound.value.eventConsumerTerminated() }
    }
}
