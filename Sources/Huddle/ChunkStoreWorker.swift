import DequeModule
import HuddleProtocol
import HuddleSession
import NIOConcurrencyHelpers
import NIOPosix

/// Applies a session journal's store actions (``JournalCore/defersStoreActions``) to its ``FileChunkStore`` off the
/// event loop, on NIO's blocking-I/O thread pool, and hands each result back to the loop.
///
/// Why: a chunk write that the kernel throttles (dirty-page writeback on a slow disk), a read that misses the page
/// cache, or a resume scan that reads and hashes up to 100 MiB would otherwise stall every connection of the node,
/// their acknowledgements and timers included.
///
/// The actions run one after another in the order the core gave them (at most one drain runs at a time), so a chunk
/// is read only after it was written and an event that waited behind writes comes back after them. Reads and scans
/// verify what they read (``ChunkVerifier``) here too, so the loop never hashes stored chunks.
///
/// Bounded: once the chunk bytes waiting to be written reach ``maxBacklogBytes``, ``admitsInput()`` says no and the
/// engine stops taking endpoint events (the transport's flow control then holds the senders back) until the backlog
/// is down to half of it.
final class ChunkStoreWorker: Sendable {
    /// A deferred store action with the verifier of its attachment (taken on the loop when it was polled).
    struct Job: Sendable {
        var action: JournalAction
        var verifier: ChunkVerifier?
    }

    /// The chunk bytes waiting to be written before the engine stops taking endpoint events: 128 chunks of 64 KiB,
    /// about 80 ms of a fast disk and more than a 1 Gbit/s link delivers in 60 ms.
    static let maxBacklogBytes = 8 << 20
    /// The most jobs applied before their results go back to the loop (one hop per batch, not per job).
    static let maxJobsPerHandBack = 32

    private struct State {
        var jobs = Deque<Job>()
        /// Bytes of chunk writes queued or being applied.
        var backlogBytes = 0
        var draining = false
        var closed = false
        /// ``admitsInput()`` said no: resume the engine's input once the backlog is down to half.
        var throttled = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let store: FileChunkStore
    private let pool: NIOThreadPool
    private let handBack: @Sendable ([JournalStoreCompletion]) -> Void
    private let resumeInput: @Sendable () -> Void
    private let state = NIOLockedValueBox(State())

    /// A worker for `store` on `pool`: `handBack` takes each batch of results (in order) back to the loop,
    /// `resumeInput` restarts the engine's input after ``admitsInput()`` said no.
    init(
        store: FileChunkStore, pool: NIOThreadPool = .singleton,
        handBack: @escaping @Sendable ([JournalStoreCompletion]) -> Void,
        resumeInput: @escaping @Sendable () -> Void
    ) {
        self.store = store
        self.pool = pool
        self.handBack = handBack
        self.resumeInput = resumeInput
    }

    /// Queues `jobs` behind those already queued (event loop).
    func submit(_ jobs: [Job]) {
        let start = state.withLockedValue { state -> Bool in
            guard !state.closed else { return false }
            state.jobs.append(contentsOf: jobs)
            state.backlogBytes += jobs.reduce(0) { $0 + Self.writtenBytes($1.action) }
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if start { pool.submit { [self] _ in drain() } }
    }

    /// Whether the engine may take more endpoint events: `false` (remembered, so the worker resumes the input later)
    /// while the write backlog is at ``maxBacklogBytes``.
    func admitsInput() -> Bool {
        state.withLockedValue { state in
            guard state.backlogBytes >= Self.maxBacklogBytes, !state.closed else { return true }
            state.throttled = true
            return false
        }
    }

    /// The chunk bytes queued and not yet written (for tests).
    var backlogBytes: Int { state.withLockedValue { $0.backlogBytes } }

    /// Stops taking jobs, drops those not started and returns once the batch being applied (if any, at most
    /// ``maxJobsPerHandBack`` jobs) is done, so the store's directory can be removed without a write re-creating it.
    /// An input it had stopped is resumed: the endpoint outlives the session.
    func close() async {
        await withCheckedContinuation { continuation in
            let (idle, resume) = state.withLockedValue { state -> (Bool, Bool) in
                state.closed = true
                state.jobs.removeAll()
                state.backlogBytes = 0
                let resume = state.throttled
                state.throttled = false
                guard state.draining else { return (true, resume) }
                state.idleWaiters.append(continuation)
                return (false, resume)
            }
            if resume { resumeInput() }
            if idle { continuation.resume() }
        }
    }

    /// Applies jobs until none is left (pool thread), handing the results back in batches.
    private func drain() {
        while true {
            // Stopping and collecting who waits for it happen together: a drain started right after must not
            // resume them while it still writes.
            let (batch, waiters) = state.withLockedValue { state -> ([Job]?, [CheckedContinuation<Void, Never>]) in
                guard !state.closed, !state.jobs.isEmpty else {
                    state.draining = false
                    defer { state.idleWaiters.removeAll() }
                    return (nil, state.idleWaiters)
                }
                let count = min(state.jobs.count, Self.maxJobsPerHandBack)
                let batch = Array(state.jobs.prefix(count))
                state.jobs.removeFirst(count)
                return (batch, [])
            }
            guard let batch else {
                for waiter in waiters { waiter.resume() }
                return
            }
            var completions: [JournalStoreCompletion] = []
            completions.reserveCapacity(batch.count)
            var store = self.store
            for job in batch {
                if let completion = store.apply(job.action, verifier: job.verifier) { completions.append(completion) }
            }
            let (resume, closed) = state.withLockedValue { state -> (Bool, Bool) in
                // Closing already emptied the backlog.
                if !state.closed { state.backlogBytes -= batch.reduce(0) { $0 + Self.writtenBytes($1.action) } }
                let resume = state.throttled && state.backlogBytes <= Self.maxBacklogBytes / 2
                if resume { state.throttled = false }
                return (resume, state.closed)
            }
            if !closed { handBack(completions) }
            if resume { resumeInput() }
        }
    }

    private static func writtenBytes(_ action: JournalAction) -> Int {
        if case .writeChunk(_, _, let bytes) = action { return bytes.count }
        return 0
    }
}
