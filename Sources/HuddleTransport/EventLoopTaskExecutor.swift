import NIOCore

/// A Swift concurrency `TaskExecutor` that runs jobs on one SwiftNIO event loop, so a task can prefer the loop a
/// ``UDPEndpointDriver`` lives on (`Task(executorPreference:)`, `withTaskExecutorPreference(_:operation:)`).
///
/// Why: a message that arrives on the loop and is read by a task on the cooperative pool costs two thread switches
/// per direction (wake the reader, wake the loop again for its reply). A task that prefers this executor is resumed
/// on the loop itself, and what it sends reaches the endpoint and the socket there, in the same pass.
///
/// Guarantees: jobs run on the loop's thread in the order they were enqueued, each as its own loop task (never nested
/// inside another loop callback). Jobs isolated to an actor still run on that actor's executor. Work that blocks a
/// job blocks the loop: every connection of the endpoint stalls with it, so keep blocking calls off tasks that prefer
/// this executor.
public final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop jobs run on.
    public let eventLoop: any EventLoop

    /// An executor for `eventLoop`.
    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `job` on the loop after what is already queued there.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
