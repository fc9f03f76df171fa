import Foundation

/// Blocking work a test does (a flood of `sendto` calls paced by `usleep`, a `recv` loop with a timeout) run on a
/// thread of its own.
///
/// Swift's cooperative pool has one thread per core, two on the CI machine, and every test in the process shares it.
/// A loop that blocks one of those threads for seconds halves the pool for every other test running at the time:
/// a flood test that did so made unrelated joins take 10 s and more under the full suite (2026-11-29).
public enum OwnThread {
    /// Runs `body` on a new thread and returns what it returns (or throws what it throws), suspending the caller
    /// without holding a pool thread meanwhile.
    public static func run<Result: Sendable>(
        _ name: String, _ body: @escaping @Sendable () throws -> Result
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
            let thread = Thread {
                continuation.resume(with: Swift.Result { try body() })
            }
            thread.name = name
            thread.start()
        }
    }
}
