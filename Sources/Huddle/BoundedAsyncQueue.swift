import DequeModule
import NIOConcurrencyHelpers

/// A single-consumer async queue holding at most `capacity` elements: a producer that finds it full suspends until
/// the consumer takes one, so a slow reader slows the writer down instead of losing elements or growing memory.
/// Finishing (by either side) ends iteration after the buffered elements and makes further pushes return `false`.
final class BoundedAsyncQueue<Element: Sendable>: Sendable {
    private struct State {
        var buffer = Deque<Element>()
        var consumer: CheckedContinuation<Element?, Never>?
        var producers = Deque<CheckedContinuation<Void, Never>>()
        var finished = false
    }

    let capacity: Int
    private let state = NIOLockedValueBox(State())

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    private enum PushStep {
        case done(Bool, CheckedContinuation<Element?, Never>?)
        case wait
    }

    /// Appends `element`, suspending while the queue is full. Returns `false` (dropping it) once finished.
    @discardableResult
    func push(_ element: Element) async -> Bool {
        while true {
            let step: PushStep = state.withLockedValue { state in
                if state.finished { return .done(false, nil) }
                if let consumer = state.consumer {
                    state.consumer = nil
                    return .done(true, consumer)
                }
                if state.buffer.count < capacity {
                    state.buffer.append(element)
                    return .done(true, nil)
                }
                return .wait
            }
            switch step {
            case .done(let accepted, let consumer):
                consumer?.resume(returning: element)
                return accepted
            case .wait:
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLockedValue { state -> Bool in
                        if state.finished || state.buffer.count < capacity { return true }
                        state.producers.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// The next element, waiting for one; `nil` once finished and drained, or when the waiting task is cancelled.
    func next() async -> Element? {
        if Task.isCancelled { return nil }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let (element, producer, end) = state.withLockedValue {
                    state -> (Element?, CheckedContinuation<Void, Never>?, Bool) in
                    if let element = state.buffer.popFirst() {
                        return (element, state.producers.popFirst(), false)
                    }
                    if state.finished || Task.isCancelled { return (nil, nil, true) }
                    state.consumer = continuation
                    return (nil, nil, false)
                }
                producer?.resume()
                if let element {
                    continuation.resume(returning: element)
                } else if end {
                    continuation.resume(returning: nil)
                }
            }
        } onCancel: {
            let consumer = state.withLockedValue { state in
                defer { state.consumer = nil }
                return state.consumer
            }
            consumer?.resume(returning: nil)
        }
    }

    /// Ends the queue: buffered elements are still delivered, then iteration ends; waiting producers return.
    func finish() {
        let (consumer, producers) = state.withLockedValue { state in
            state.finished = true
            let consumer = state.buffer.isEmpty ? state.consumer : nil
            if consumer != nil { state.consumer = nil }
            let producers = state.producers
            state.producers.removeAll()
            return (consumer, producers)
        }
        consumer?.resume(returning: nil)
        for producer in producers { producer.resume() }
    }

    /// Elements waiting.
    var count: Int { state.withLockedValue { $0.buffer.count } }
}
