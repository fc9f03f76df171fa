import Dispatch
import Synchronization

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// SIGINT and SIGTERM as async events, so a node can leave gracefully whatever it is doing (joining, chatting,
/// serving a benchmark).
///
/// A signal is remembered: once one arrived, every ``first()``, earlier or later, returns it, so a signal that
/// lands between two phases (while the node starts, just after a join) is not lost. Any number of tasks may wait at
/// once. A second signal ends the process at once (exit status 128 + signal), for when a graceful leave takes too
/// long.
enum Signals {
    private struct State {
        var received: Int32?
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
        var nextWaiter = 0
    }

    private static let state = Mutex(State())
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    private static let installation: Void = {
        for signal in [SIGINT, SIGTERM] {
            Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { deliver(signal) }
            source.resume()
            sources.append(source)
        }
    }()

    /// Installs the handlers (call early: until then the default action, ending the process, applies).
    static func install() { _ = installation }

    /// The first signal received, if any.
    static var received: Int32? { state.withLock { $0.received } }

    /// The first signal (at once if one already arrived), or `nil` if the task is cancelled first.
    static func first() async -> Int32? {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now: Int32?? = state.withLock { state in
                    if let received = state.received { return .some(received) }
                    // Checked under the lock: a cancellation handler that ran before registration found nothing to
                    // resume, so this must not register.
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// The name people know `signal` by.
    static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(signal)"
        }
    }

    private static func deliver(_ signal: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int32?, Never>]? in
            guard state.received == nil else { return nil }
            state.received = signal
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        guard let waiters else {
            // The second signal: the person wants out now.
            _exit(128 + signal)
        }
        for waiter in waiters { waiter.resume(returning: signal) }
    }
}
