import DequeModule
import NIOConcurrencyHelpers

/// A single-consumer async queue holding at most `capacity` elements: a producer that finds it full suspends until
/// the consumer has taken half of them, so a slow reader slows the writer down instead of losing elements or growing
/// memory (and a producer that keeps it full is woken once per half, not once per element). Finishing (by either
/// side) ends iteration after the buffered elements and makes further pushes return `false`.
///
/// Pushing and taking run in the caller's isolation (the `isolation` parameter), waits included: the engine's actor
/// and a reader preferring the event loop are resumed where they waited, never on the cooperative pool in between.
/// (`nonisolated(nonsending)` is not enough here: `#isolation` is `nil` inside such a function, so the operation given
/// to `withTaskCancellationHandler` would run on the global executor, a thread switch per message.)
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
    func push(_ element: Element, isolation: isolated (any Actor)? = #isolation) async -> Bool {
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

    /// Appends `elements` in order, suspending whenever the queue is full. Returns `false` once finished (the rest
    /// is dropped).
    func push(contentsOf elements: [Element], isolation: isolated (any Actor)? = #isolation) async -> Bool {
        var index = 0
        while index < elements.count {
            let (accepted, consumer, handed) = state.withLockedValue {
                state -> (Bool, CheckedContinuation<Element?, Never>?, Element?) in
                if state.finished { return (false, nil, nil) }
                while index < elements.count, state.buffer.count < capacity {
                    state.buffer.append(elements[index])
                    index += 1
                }
                // A waiting consumer means the buffer was empty: it gets the first of the new elements.
                guard let consumer = state.consumer, let first = state.buffer.popFirst() else {
                    return (true, nil, nil)
                }
                state.consumer = nil
                return (true, consumer, first)
            }
            if let consumer { consumer.resume(returning: handed) }
            guard accepted else { return false }
            if index < elements.count {
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
        return true
    }

    /// The next element, waiting for one; `nil` once finished and drained, or when the waiting task is cancelled.
    func next(isolation: isolated (any Actor)? = #isolation) async -> Element? {
        if Task.isCancelled { return nil }
        // Without suspending when an element is there (the common case for a busy stream).
        let (ready, producers) = state.withLockedValue { state -> (Element?, [CheckedContinuation<Void, Never>]) in
            guard let element = state.buffer.popFirst() else { return (nil, []) }
            return (element, Self.producersToWake(&state, capacity: capacity))
        }
        for producer in producers { producer.resume() }
        if let ready { return ready }
        return await withTaskCancellationHandler {
            // A closure runs in the isolated parameter's isolation only if it captures it; without this line it would
            // run (and be resumed) on the global executor.
            _ = isolation
            return await withCheckedContinuation { continuation in
                let (element, producers, end) = state.withLockedValue {
                    state -> (Element?, [CheckedContinuation<Void, Never>], Bool) in
                    if let element = state.buffer.popFirst() {
                        return (element, Self.producersToWake(&state, capacity: capacity), false)
                    }
                    if state.finished || Task.isCancelled { return (nil, [], true) }
                    state.consumer = continuation
                    return (nil, [], false)
                }
                for producer in producers { producer.resume() }
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

    /// The producers to resume once the consumer has taken half the buffer (all of them: each re-checks for room).
    private static func producersToWake(
        _ state: inout State, capacity: Int
    ) -> [CheckedContinuation<Void, Never>] {
        guard !state.producers.isEmpty, state.buffer.count <= capacity / 2 else { return [] }
        defer { state.producers.removeAll() }
        return Array(state.producers)
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
