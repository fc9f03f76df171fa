import DequeModule
import HuddleProtocol
import HuddleWire
import NIOConcurrencyHelpers

/// The lock-protected queue between the tasks that send reliable messages and the driver's event loop.
///
/// A sender appends under the lock and returns; the first append after a drain schedules one drain task on the event
/// loop (``needsDrain`` reports whether one is pending), which takes everything queued so far at once, so a burst of
/// small messages reaches the endpoint together and is coalesced into packets before one flush.
///
/// Bounded per destination and channel (``Key``): at most ``Limits/bytes`` bytes and ``Limits/messages`` messages
/// that the endpoint has not taken yet, counting those waiting on the event loop for the channel's send window. A
/// sender that finds its allowance used up waits (``Waiter``) and is admitted, in order, as the event loop hands
/// earlier messages to the endpoint (``release(_:)``). A message larger than the byte allowance is admitted once
/// nothing else is queued for its key, so any message up to the protocol's limit can be sent.
///
/// FIFO per key: messages are appended in the order they are admitted, a waiter is admitted only after the waiters
/// before it with the same key, and a new sender queues behind waiting ones.
final class OutboundQueue: Sendable {
    /// The allowance a message is charged against: its destination and channel.
    struct Key: Hashable {
        let destination: OutboundDestination
        let channel: ChannelID
    }

    /// The bounds per key.
    struct Limits {
        var bytes: Int
        var messages: Int
    }

    /// A sender waiting for room.
    struct Waiter {
        /// The message it wants queued.
        let send: PendingSend
        /// Identifies the waiter for cancellation.
        let ticket: SendTicket
        /// Resumed for ``UDPEndpointDriver/enqueue(_:on:to:)`` callers once admitted (`nil`) or refused; `nil` for
        /// ``UDPEndpointDriver/send(_:on:to:)``, whose caller keeps waiting on the message's completion.
        let admission: CheckedContinuation<TransportError?, Never>?

        /// Resolves the waiter as refused with `error`.
        func refuse(_ error: TransportError) {
            if let admission {
                admission.resume(returning: error)
            } else {
                _ = send.resolve(.failure(error))
            }
        }
    }

    /// What happened to an offered message.
    enum Offer {
        /// Queued; the caller must schedule a drain if `scheduleDrain`.
        case accepted(scheduleDrain: Bool)
        /// No room: wait with ``wait(_:)``.
        case full
        /// Refused.
        case refused(TransportError)
    }

    /// What ``wait(_:)`` did.
    enum WaitOutcome {
        /// The message was queued after all (room appeared meanwhile); schedule a drain if `scheduleDrain`.
        case accepted(scheduleDrain: Bool)
        /// The waiter was registered; it is resolved later.
        case waiting
        /// Refused.
        case refused(TransportError)
    }

    /// Counters kept under the lock (merged into ``TransportStatistics``).
    struct Counters {
        var messagesQueued = 0
        var queueWaits = 0
        /// Messages and bytes charged now (queued, or waiting on the event loop for their window).
        var messagesHeld = 0
        var bytesHeld = 0
    }

    private struct Usage {
        var bytes = 0
        var messages = 0
    }

    /// Allowance given back: `messages` messages of `bytes` bytes in all for `key`.
    struct Release {
        let key: Key
        var bytes: Int
        var messages: Int
    }

    private struct State {
        var entries = Deque<PendingSend>()
        var usage: [Key: Usage] = [:]
        var waiters = Deque<Waiter>()
        var drainScheduled = false
        var closed = false
        /// Connections known to be closed (ids are never reused), most recent last, at most
        /// ``OutboundQueue/maxRememberedClosedConnections``: offers to them fail at once.
        var closedConnections = Set<ConnectionID>()
        var closedOrder = Deque<ConnectionID>()
        var counters = Counters()
    }

    /// How many closed connections are remembered for failing offers at once; a message for a connection closed
    /// longer ago is accepted and then reported as unsent when the queue is drained.
    static let maxRememberedClosedConnections = 4096

    let limits: Limits
    private let state = NIOLockedValueBox(State())

    init(limits: Limits) {
        self.limits = limits
    }

    private static func modify<Value>(_ value: inout Value, _ body: (inout Value) -> Void) { body(&value) }

    private static func fits(_ usage: Usage?, size: Int, limits: Limits) -> Bool {
        guard let usage, usage.messages > 0 else { return true }
        return usage.bytes + size <= limits.bytes && usage.messages < limits.messages
    }

    private static func refusal(for send: PendingSend, in state: State) -> TransportError? {
        if state.closed { return .driverClosed }
        if case .connection(let id) = send.destination, state.closedConnections.contains(id) {
            return .connectionClosed(id)
        }
        return nil
    }

    /// Appends `send` to `state` and charges its key; returns whether the caller must schedule a drain.
    private static func append(_ send: PendingSend, to state: inout State) -> Bool {
        state.entries.append(send)
        modify(&state.usage[send.key, default: Usage()]) { usage in
            usage.bytes += send.message.count
            usage.messages += 1
        }
        state.counters.messagesQueued += 1
        if state.drainScheduled { return false }
        state.drainScheduled = true
        return true
    }

    /// Queues `send` if its key has room and nobody waits for that key.
    func offer(_ send: PendingSend) -> Offer {
        state.withLockedValue { state in
            if let error = Self.refusal(for: send, in: state) { return .refused(error) }
            let key = send.key
            guard Self.fits(state.usage[key], size: send.message.count, limits: limits),
                !state.waiters.contains(where: { $0.send.key == key })
            else { return .full }
            return .accepted(scheduleDrain: Self.append(send, to: &state))
        }
    }

    /// Registers `waiter` (after ``offer(_:)`` said `.full`), unless room appeared or the queue closed meanwhile.
    func wait(_ waiter: Waiter) -> WaitOutcome {
        state.withLockedValue { state in
            if let error = Self.refusal(for: waiter.send, in: state) { return .refused(error) }
            if waiter.ticket.isCancelled { return .refused(.cancelled) }
            let key = waiter.send.key
            if Self.fits(state.usage[key], size: waiter.send.message.count, limits: limits),
                !state.waiters.contains(where: { $0.send.key == key })
            {
                return .accepted(scheduleDrain: Self.append(waiter.send, to: &state))
            }
            state.waiters.append(waiter)
            state.counters.queueWaits += 1
            return .waiting
        }
    }

    /// Removes the waiter holding `ticket`, if it still waits.
    func removeWaiter(_ ticket: SendTicket) -> Waiter? {
        state.withLockedValue { state in
            guard let index = state.waiters.firstIndex(where: { $0.ticket === ticket }) else { return nil }
            return state.waiters.remove(at: index)
        }
    }

    /// Moves everything queued so far, in order, into `buffer` (event loop; `buffer` must be empty, and its storage
    /// is swapped in so that steady draining does not allocate). Clears the pending-drain mark: the next append
    /// schedules a new drain.
    func takeAll(into buffer: inout Deque<PendingSend>) {
        precondition(buffer.isEmpty)
        state.withLockedValue { state in
            state.drainScheduled = false
            guard !state.entries.isEmpty else { return }
            swap(&state.entries, &buffer)
        }
    }

    /// Gives back the allowance of messages the endpoint took (or that failed) and admits the waiters that now fit,
    /// in order. Returns the admitted ``UDPEndpointDriver/enqueue(_:on:to:)`` callers (resume them with `nil` outside
    /// any lock) and whether the caller must schedule a drain for the admitted messages.
    func release(_ released: [Release]) -> (admitted: [CheckedContinuation<TransportError?, Never>], drain: Bool) {
        state.withLockedValue { state in
            for release in released {
                guard var usage = state.usage[release.key] else { continue }
                usage.bytes -= release.bytes
                usage.messages -= release.messages
                state.usage[release.key] = usage.messages > 0 ? usage : nil
            }
            guard !state.waiters.isEmpty else { return ([], false) }
            var admitted: [CheckedContinuation<TransportError?, Never>] = []
            var drain = false
            var blocked = Set<Key>()
            var index = 0
            while index < state.waiters.count {
                let waiter = state.waiters[index]
                let key = waiter.send.key
                guard !blocked.contains(key),
                    Self.fits(state.usage[key], size: waiter.send.message.count, limits: limits)
                else {
                    blocked.insert(key)
                    index += 1
                    continue
                }
                state.waiters.remove(at: index)
                if Self.append(waiter.send, to: &state) { drain = true }
                if let admission = waiter.admission { admitted.append(admission) }
            }
            return (admitted, drain)
        }
    }

    /// Remembers that connection `id` closed: later offers to it fail with ``TransportError/connectionClosed(_:)``,
    /// and so do the senders waiting for room on it (returned; resolve them outside any lock). Messages already
    /// queued for it stay and are reported as unsent when drained.
    func connectionClosed(_ id: ConnectionID) -> [Waiter] {
        state.withLockedValue { state in
            if state.closedConnections.insert(id).inserted {
                state.closedOrder.append(id)
                if state.closedOrder.count > Self.maxRememberedClosedConnections {
                    state.closedConnections.remove(state.closedOrder.removeFirst())
                }
            }
            guard state.waiters.contains(where: { $0.send.destination == .connection(id) }) else { return [] }
            var refused: [Waiter] = []
            state.waiters.removeAll { waiter in
                guard waiter.send.destination == .connection(id) else { return false }
                refused.append(waiter)
                return true
            }
            return refused
        }
    }

    /// Closes the queue: later offers fail with ``TransportError/driverClosed``. Returns what was queued and the
    /// waiting senders, for the caller to resolve.
    func close() -> (entries: Deque<PendingSend>, waiters: Deque<Waiter>) {
        state.withLockedValue { state in
            state.closed = true
            defer {
                state.entries.removeAll()
                state.waiters.removeAll()
                state.usage.removeAll()
            }
            return (state.entries, state.waiters)
        }
    }

    /// The counters.
    var counters: Counters {
        state.withLockedValue { state in
            var counters = state.counters
            for usage in state.usage.values {
                counters.messagesHeld += usage.messages
                counters.bytesHeld += usage.bytes
            }
            return counters
        }
    }
}
