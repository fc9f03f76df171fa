import Huddle
import ServiceLifecycle

/// A started ``Huddle/HuddleNode`` as a swift-service-lifecycle `Service`, so a server app runs it in one
/// `ServiceGroup` with its other services (Hummingbird, Vapor, a database client) and stops them together.
///
/// ``run()`` keeps the node running until the group shuts down gracefully (SIGTERM or SIGINT when the group is
/// configured to listen for them, or `triggerGracefulShutdown()`) or its task is cancelled, then shuts the node down
/// the way ``Huddle/HuddleNode/shutdown()`` does: the node leaves its session (MEMBER_LEFT is announced and waited
/// for up to 2 s, so the others report it as having *left*, not as unreachable 30 s later), the attachment store's
/// pending writes complete, every connection closes and the socket is released. The node stays usable by the app
/// until then.
///
/// ```swift
/// let node = try await HuddleNode.start(configuration)
/// let group = ServiceGroup(
///     services: [HuddleNodeService(node), httpServer],
///     gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
public struct HuddleNodeService: Service {
    /// The node this service stops.
    public let node: HuddleNode

    /// A service that shuts `node` down when its group stops.
    public init(_ node: HuddleNode) {
        self.node = node
    }

    /// Returns once the node has left its session and closed, after a graceful shutdown or cancellation.
    public func run() async throws {
        // Throws CancellationError when the task is cancelled instead: either way the node goes.
        try? await gracefulShutdown()
        await node.shutdown()
    }
}
