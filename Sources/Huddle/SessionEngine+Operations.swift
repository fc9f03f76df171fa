import HuddleProtocol
import HuddleSession
import HuddleTransport

/// The one way the application's requests reach the session: ``perform(in:_:)`` runs a request of a handle's own
/// session on the event loop with the machine and the endpoint, and dispatches what it produced. The requests
/// themselves live with the handles that make them (``Journal``, ``GroupSession``, ``Messenger``).
extension SessionEngine {
    /// Runs `body` on the event loop with `context`'s session machine and the endpoint, then dispatches its output.
    ///
    /// A handle acts on its own session only, never on whichever one the node has at the time: the check is made on
    /// the actor and again on the loop, where the machine must still be the one installed for `context`.
    ///
    /// - Throws: ``HuddleError/invalidated(_:)`` once that session is over, ``HuddleError/notJoined`` while it is
    ///   not joined yet; ``HuddleError/transport(_:)`` when the node is shut down; what `body` throws.
    func perform<Result: Sendable>(
        in context: SessionContext,
        _ body:
            @escaping @Sendable (inout SessionMachine<FileChunkStore>, inout Endpoint, Instant) throws(HuddleError)
            -> Result
    ) async throws(HuddleError) -> Result {
        try context.requireJoined()
        guard context === self.context else { throw HuddleError.notJoined }
        return try await performOnCore(generation: generation, body)
    }

    /// Runs `body` on the event loop with the machine of session `generation` (any installed one when `nil`) and the
    /// endpoint, then dispatches what it produced.
    func performOnCore<Result: Sendable>(
        generation: Int? = nil,
        _ body:
            @escaping @Sendable (inout SessionMachine<FileChunkStore>, inout Endpoint, Instant) throws(HuddleError)
            -> Result
    ) async throws(HuddleError) -> Result {
        let loop = self.loop
        let performed: (Result, LoopSession.Output)
        do {
            performed = try await driver.perform { endpoint, now -> (Result, LoopSession.Output) in
                guard loop.value != nil, generation.map({ $0 == loop.value!.generation }) ?? true else {
                    throw HuddleError.notJoined
                }
                let result = try body(&loop.value!.machine, &endpoint, now)
                return (result, loop.value!.drain())
            }
        } catch let error as HuddleError {
            throw error
        } catch let error as TransportError {
            throw .transport(error)
        } catch {
            // The loop refuses work only once it is shut down, which for the application is a closed node.
            throw .transport(.driverClosed)
        }
        await dispatch(performed.1)
        return performed.0
    }

    /// The node's counters and levels now, and the current session's participant count, for ``NodeMetrics``.
    func metricsSample() async throws -> (sample: NodeMetricsSample, participants: Int) {
        let transport = try await driver.statistics()
        let loop = self.loop
        let sample = try await driver.perform { endpoint, _ in
            NodeMetricsSample(
                endpoint: endpoint, transport: transport,
                session: loop.value.flatMap { NodeMetricsSample.SessionCounters($0, endpoint: endpoint) })
        }
        let participants = context.map { $0.isInvalidated ? 0 : $0.participants.value.count } ?? 0
        return (sample, participants)
    }
}
