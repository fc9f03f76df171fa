import NIOConcurrencyHelpers

/// A current value and a stream of its changes for any number of observers: each ``stream()`` starts with the
/// current value and then yields every change. Observers that fall behind see only the newest value (these are state
/// snapshots, so only the latest matters), which keeps memory bounded.
final class Broadcast<Value: Sendable>: Sendable {
    private let observers: ObserverList<Value>

    init(_ value: Value) {
        observers = ObserverList(bufferLimit: 1, latest: value)
    }

    /// The current value.
    var value: Value { observers.latest! }

    /// Sets the value and yields it to every observer.
    func update(_ value: Value) { observers.publish(value) }

    /// Ends every stream (after their latest value).
    func finish() { observers.finish() }

    /// The current value, then every change.
    func stream() -> AsyncStream<Value> { observers.subscribe() }
}

/// Events for any number of observers, each with its own buffer of at most `bufferLimit` events (an observer that
/// falls further behind loses the oldest; the current state is always available separately), or, with no limit,
/// every event (a buffer that grows until its observer reads).
final class EventFanOut<Event: Sendable>: Sendable {
    private let observers: ObserverList<Event>

    init(bufferLimit: Int?) {
        observers = ObserverList(bufferLimit: bufferLimit, latest: nil)
    }

    /// Yields `event` to every observer.
    func yield(_ event: Event) { observers.publish(event) }

    /// Ends every stream.
    func finish() { observers.finish() }

    /// Every event from now on.
    func stream() -> AsyncStream<Event> { observers.subscribe() }
}

/// The observer bookkeeping both share: registration, publication and finishing under one lock, so an observer
/// that subscribes while a value is published gets either the old value followed by the new one, or the new one.
private final class ObserverList<Element: Sendable>: Sendable {
    private struct State {
        var observers: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextID = 0
        var finished = false
        /// The retained latest element (snapshot streams only).
        var latest: Element?
    }

    private let state: NIOLockedValueBox<State>
    /// `nil`: unbounded.
    private let bufferLimit: Int?
    private let retainsLatest: Bool

    init(bufferLimit: Int?, latest: Element?) {
        self.bufferLimit = bufferLimit
        self.retainsLatest = latest != nil
        state = NIOLockedValueBox(State(latest: latest))
    }

    var latest: Element? { state.withLockedValue { $0.latest } }

    func publish(_ element: Element) {
        let observers = state.withLockedValue { state in
            if retainsLatest { state.latest = element }
            return Array(state.observers.values)
        }
        for observer in observers { observer.yield(element) }
    }

    func finish() {
        let observers = state.withLockedValue { state in
            state.finished = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }

    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(
            bufferingPolicy: bufferLimit.map { .bufferingNewest($0) } ?? .unbounded)
        let (current, finished, id) = state.withLockedValue { state in
            let id = state.nextID
            state.nextID += 1
            if !state.finished { state.observers[id] = continuation }
            return (state.latest, state.finished, id)
        }
        if let current { continuation.yield(current) }
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
