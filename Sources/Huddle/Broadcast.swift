import NIOConcurrencyHelpers

/// A current value and a stream of its changes for any number of observers: each ``stream()`` starts with the
/// current value and then yields every change. Observers that fall behind see only the newest value (these are state
/// snapshots, so only the latest matters), which keeps memory bounded.
final class Broadcast<Value: Sendable>: Sendable {
    private struct State {
        var value: Value
        var observers: [Int: AsyncStream<Value>.Continuation] = [:]
        var nextID = 0
        var finished = false
    }

    private let state: NIOLockedValueBox<State>

    init(_ value: Value) {
        state = NIOLockedValueBox(State(value: value))
    }

    var value: Value { state.withLockedValue { $0.value } }

    func update(_ value: Value) {
        let observers = state.withLockedValue { state in
            state.value = value
            return Array(state.observers.values)
        }
        for observer in observers { observer.yield(value) }
    }

    /// Ends every stream (after their latest value).
    func finish() {
        let observers = state.withLockedValue { state in
            state.finished = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }

    func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (current, finished, id) = state.withLockedValue { state in
            let id = state.nextID
            state.nextID += 1
            if !state.finished { state.observers[id] = continuation }
            return (state.value, state.finished, id)
        }
        continuation.yield(current)
        if finished {
            continuation.finish()
        } else {
            continuation.onTermination = { [weak self] _ in
                self?.state.withLockedValue { _ = $0.observers.removeValue(forKey: id) }
            }
        }
        return stream
    }
}

/// Events for any number of observers, each with its own buffer of at most `bufferLimit` events (an observer that
/// falls further behind loses the oldest; the current state is always available separately).
final class EventFanOut<Event: Sendable>: Sendable {
    private struct State {
        var observers: [Int: AsyncStream<Event>.Continuation] = [:]
        var nextID = 0
        var finished = false
    }

    private let state = NIOLockedValueBox(State())
    let bufferLimit: Int

    init(bufferLimit: Int) {
        self.bufferLimit = bufferLimit
    }

    func yield(_ event: Event) {
        for observer in state.withLockedValue({ Array($0.observers.values) }) { observer.yield(event) }
    }

    func finish() {
        let observers = state.withLockedValue { state in
            state.finished = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }

    func stream() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(bufferLimit))
        let (id, finished) = state.withLockedValue { state in
            let id = state.nextID
            state.nextID += 1
            if !state.finished { state.observers[id] = continuation }
            return (id, state.finished)
        }
        if finished {
            continuation.finish()
        } else {
            continuation.onTermination = { [weak self] _ in
                self?.state.withLockedValue { _ = $0.observers.removeValue(forKey: id) }
            }
        }
        return stream
    }
}
