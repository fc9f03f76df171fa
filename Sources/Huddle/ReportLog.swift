import NIOConcurrencyHelpers

/// Every report of one session from its start, for any number of observers: each ``stream()`` yields all of them,
/// past ones first, then each new one, in order, and drops none (an observer's buffer is unbounded).
///
/// Its size is that of the reports themselves: for delivery failures, one per participant and cause with the
/// receipt numbers it names, which the transport's own queue limits bound per burst; a session keeps them all, as
/// the application may ask about any receipt (``Messenger/outcome(of:)``).
final class ReportLog<Report: Sendable>: Sendable {
    private struct State {
        var reports: [Report] = []
        var observers: [Int: AsyncStream<Report>.Continuation] = [:]
        var nextID = 0
        var finished = false
    }

    private let state = NIOLockedValueBox(State())

    /// Appends `report` and yields it to every observer. Yielding happens under the lock, so every observer sees the
    /// reports in the order they were appended, and one that subscribes meanwhile sees each exactly once.
    func append(_ report: Report) {
        state.withLockedValue { state in
            guard !state.finished else { return }
            state.reports.append(report)
            for observer in state.observers.values { observer.yield(report) }
        }
    }

    /// Ends every stream after the reports it has.
    func finish() {
        let observers = state.withLockedValue { state in
            state.finished = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }

    /// Every report from the session's start, then each new one until the session ends.
    func stream() -> AsyncStream<Report> {
        let (stream, continuation) = AsyncStream<Report>.makeStream(bufferingPolicy: .unbounded)
        let id: Int? = state.withLockedValue { state in
            for report in state.reports { continuation.yield(report) }
            guard !state.finished else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.observers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { _ = $0.observers.removeValue(forKey: id) }
        }
        return stream
    }
}
