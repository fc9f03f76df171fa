import NIOConcurrencyHelpers

/// What the transport's event loop produced for the ``SessionEngine`` (the session cores' output for a batch of
/// endpoint events), waiting to be dispatched on the engine actor.
///
/// The event loop pushes without waiting; the engine takes everything that is there at once (``next()``), dispatches
/// it, and then reports it done (``dispatched(_:)``). Bounded: once the outputs pushed and not yet dispatched hold
/// ``maxEvents`` events or ``maxBytes`` message bytes, ``push(_:)`` returns `false` and the event loop stops taking
/// events from the endpoint (so unread messages withhold flow-control credit) until the engine catches up and asks
/// the driver to resume.
final class EventInbox: Sendable {
    /// One pushed output, tagged with the session it belongs to.
    struct Batch: Sendable {
        /// The ``LoopSession/generation`` that produced it: outputs of an earlier session are not dispatched.
        var generation: Int
        var output: LoopSession.Output
        /// What it counts against the bounds.
        var events: Int
        var bytes: Int

        init(generation: Int, output: LoopSession.Output) {
            self.generation = generation
            self.output = output
            events = output.sessionEvents.count + output.journalEvents.count
            bytes = output.sessionEvents.reduce(0) { total, event in
                switch event {
                case .message(_, _, let payload), .datagram(_, _, let payload): total + payload.count
                default: total
                }
            }
        }
    }

    private struct State {
        var batches: [Batch] = []
        /// Pushed and not yet reported dispatched.
        var events = 0
        var bytes = 0
        var consumer: CheckedContinuation<[Batch]?, Never>?
        /// A push returned `false`: the producer waits for ``dispatched(_:)`` to say resume.
        var throttled = false
        var finished = false
    }

    let maxEvents: Int
    let maxBytes: Int
    private let state = NIOLockedValueBox(State())

    init(maxEvents: Int, maxBytes: Int) {
        self.maxEvents = maxEvents
        self.maxBytes = maxBytes
    }

    /// Appends `batch` (event loop) and wakes the engine if it waits; returns whether there is room for more.
    func push(_ batch: Batch) -> Bool {
        let (consumer, batches, room) = state.withLockedValue {
            state -> (CheckedContinuation<[Batch]?, Never>?, [Batch], Bool) in
            if state.finished { return (nil, [], true) }
            state.events += batch.events
            state.bytes += batch.bytes
            let room = state.events < maxEvents && state.bytes < maxBytes
            if !room { state.throttled = true }
            if let consumer = state.consumer {
                state.consumer = nil
                return (consumer, [batch], room)
            }
            state.batches.append(batch)
            return (nil, [], room)
        }
        consumer?.resume(returning: batches)
        return room
    }

    /// Everything pushed so far, waiting for something; `nil` once finished or when the waiting task is cancelled.
    func next(isolation: isolated (any Actor)? = #isolation) async -> [Batch]? {
        if Task.isCancelled { return nil }
        return await withTaskCancellationHandler {
            // A closure runs in the isolated parameter's isolation only if it captures it; without this line it would
            // run (and be resumed) on the global executor.
            _ = isolation
            return await withCheckedContinuation { continuation in
                let (batches, end) = state.withLockedValue { state -> ([Batch], Bool) in
                    if !state.batches.isEmpty {
                        defer { state.batches.removeAll(keepingCapacity: true) }
                        return (state.batches, false)
                    }
                    if state.finished || Task.isCancelled { return ([], true) }
                    state.consumer = continuation
                    return ([], false)
                }
                if end {
                    continuation.resume(returning: nil)
                } else if !batches.isEmpty {
                    continuation.resume(returning: batches)
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

    /// The engine dispatched `batches`; returns whether the producer was throttled and may now resume (then call
    /// `UDPEndpointDriver.resumeEvents()`).
    func dispatched(_ batches: [Batch]) -> Bool {
        let events = batches.reduce(0) { $0 + $1.events }
        let bytes = batches.reduce(0) { $0 + $1.bytes }
        return state.withLockedValue { state in
            state.events -= events
            state.bytes -= bytes
            guard state.throttled, state.events < maxEvents, state.bytes < maxBytes else { return false }
            state.throttled = false
            return true
        }
    }

    /// Ends the inbox: a waiting engine gets `nil`, later pushes are dropped (and never throttle).
    func finish() {
        let consumer = state.withLockedValue { state in
            state.finished = true
            state.batches.removeAll()
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
    }
}
