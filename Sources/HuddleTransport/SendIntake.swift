import DequeModule
import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Hands the reliable messages that senders put in the ``OutboundQueue`` to the endpoint, in order per connection
/// and channel, parking those whose channel's send window is full until acknowledgements reopen it, and failing
/// those that can never be sent (their connection closed, their task was cancelled, the driver closed).
///
/// A failed message whose sender waits gets the error; one whose sender already returned is counted and reported
/// through ``EventDelivery/reportUnsent(connection:peer:channel:bytes:tag:)``. Each message's allowance goes back to
/// the queue once it is handed over or failed, which admits waiting senders.
///
/// Not tied to a channel: the handler calls it on its event loop, lending its endpoint, counters and event delivery
/// (in place, so the endpoint's storage is never copied); a test can call it with a bare endpoint.
struct SendIntake {
    /// The accepted messages for one connection and channel that wait for its send window, oldest first.
    struct PendingChannel {
        let connection: ConnectionID
        let channel: ChannelID
        var sends: Deque<PendingSend>
        /// Whether the head found the window full (counted once per stall in ``TransportStatistics/sendsSuspended``).
        var stalled = false
    }

    /// The queue senders append to.
    let queue: OutboundQueue
    /// Messages just taken from ``queue`` (kept to reuse its storage).
    private var taken = Deque<PendingSend>()
    /// Accepted messages waiting for their channel's send window, per connection and channel.
    private(set) var pendingChannels: [PendingChannel] = []
    /// Allowance to give back to ``queue``: messages handed to the endpoint or failed since the last release.
    private var handed: [OutboundQueue.Release] = []

    init(queue: OutboundQueue) {
        self.queue = queue
    }

    /// Hands the messages waiting for their window to the endpoint in order, as far as each channel's window allows,
    /// then takes the messages queued since the last call and hands them over too (behind any still waiting on their
    /// channel); fails those whose connection closed or whose task was cancelled. Runs after every input, because
    /// acknowledgements (which free the window) arrive as input. Returns whether a drain must be scheduled (senders
    /// admitted meanwhile queued more).
    mutating func service(
        _ endpoint: inout Endpoint, _ statistics: inout TransportStatistics, _ events: inout EventDelivery
    ) -> Bool {
        var index = 0
        while index < pendingChannels.count {
            servicePendingChannel(at: index, &endpoint, &statistics, &events)
            if pendingChannels[index].sends.isEmpty {
                pendingChannels.remove(at: index)
            } else {
                index += 1
            }
        }
        takeQueuedSends(&endpoint, &statistics, &events)
        return releaseHanded()
    }

    /// Fails the send holding `ticket` with ``TransportError/cancelled`` if it still waits for its window; returns
    /// whether a drain must be scheduled.
    mutating func cancel(
        _ ticket: SendTicket, _ endpoint: inout Endpoint, _ statistics: inout TransportStatistics,
        _ events: inout EventDelivery
    ) -> Bool {
        for index in pendingChannels.indices {
            guard let position = pendingChannels[index].sends.firstIndex(where: { $0.ticket === ticket }) else {
                continue
            }
            let send = pendingChannels[index].sends.remove(at: position)
            fail(send, with: .cancelled, connection: pendingChannels[index].connection, &endpoint, &statistics, &events)
            if pendingChannels[index].sends.isEmpty { pendingChannels.remove(at: index) }
            return releaseHanded()
        }
        return false
    }

    /// Fails everything queued, waiting or parked (the driver is closing): waiting senders get
    /// ``TransportError/driverClosed``, messages whose senders already returned are reported as unsent.
    mutating func failAll(
        _ endpoint: inout Endpoint, _ statistics: inout TransportStatistics, _ events: inout EventDelivery
    ) {
        let (entries, waiters) = queue.close()
        for waiter in waiters { waiter.refuse(.driverClosed) }
        taken.append(contentsOf: entries)
        while let send = taken.popFirst() {
            fail(send, with: .driverClosed, connection: nil, &endpoint, &statistics, &events)
        }
        for pending in pendingChannels {
            for send in pending.sends {
                fail(send, with: .driverClosed, connection: pending.connection, &endpoint, &statistics, &events)
            }
        }
        pendingChannels.removeAll()
        handed.removeAll()
    }

    /// Connection `id` is closed: senders waiting for room on it are refused, later sends to it fail at once.
    func connectionClosed(_ id: ConnectionID) {
        for waiter in queue.connectionClosed(id) { waiter.refuse(.connectionClosed(id)) }
    }

    // MARK: - Steps

    /// What handing one message to the endpoint did.
    private enum Handover {
        case handed
        case windowFull
        case connectionClosed
    }

    /// Hands `send` to the endpoint on `connection`, resolving or failing it unless the window is full.
    private mutating func handOver(
        _ send: PendingSend, to connection: ConnectionID, _ endpoint: inout Endpoint,
        _ statistics: inout TransportStatistics, _ events: inout EventDelivery
    ) -> Handover {
        if let ticket = send.ticket, ticket.isCancelled {
            fail(send, with: .cancelled, connection: connection, &endpoint, &statistics, &events)
            return .handed
        }
        do {
            let sequence = try endpoint.send(send.message, on: send.channel, to: connection, tag: send.tag)
            if send.completion != nil { _ = send.resolve(.success(sequence)) }
            giveBack(send)
            return .handed
        } catch .queueFull {
            return .windowFull
        } catch .connectionClosed {
            return .connectionClosed
        } catch .messageTooLarge(let size, let limit) {
            fail(
                send, with: .messageTooLarge(size: size, limit: limit), connection: connection, &endpoint, &statistics,
                &events)
            return .handed
        } catch {
            fail(send, with: .protocolError(error), connection: connection, &endpoint, &statistics, &events)
            return .handed
        }
    }

    /// Takes the messages queued since the last drain and hands each to the endpoint (resolving peers to their
    /// current connection), or parks it behind earlier ones waiting on its channel.
    private mutating func takeQueuedSends(
        _ endpoint: inout Endpoint, _ statistics: inout TransportStatistics, _ events: inout EventDelivery
    ) {
        queue.takeAll(into: &taken)
        guard !taken.isEmpty else { return }
        statistics.outboundDrains += 1
        // Most batches go to one peer and channel: resolve once per run.
        var resolvedPeer: X25519PublicKey?
        var resolvedConnection: ConnectionID?
        var waiting: Int?
        var waitingKey: (ConnectionID, ChannelID)?
        while let send = taken.popFirst() {
            let connection: ConnectionID
            switch send.destination {
            case .connection(let id):
                connection = id
            case .peer(let key):
                if key != resolvedPeer {
                    resolvedPeer = key
                    resolvedConnection = endpoint.connectionID(for: key)
                }
                guard let id = resolvedConnection else {
                    // No connection to name in an error; peer-addressed messages have no waiting sender anyway.
                    fail(
                        send, with: .connectionClosed(ConnectionID(0)), connection: nil, &endpoint, &statistics, &events
                    )
                    continue
                }
                connection = id
            }
            if waitingKey.map({ $0 != connection || $1 != send.channel }) ?? true {
                waitingKey = (connection, send.channel)
                waiting = pendingChannels.firstIndex { $0.connection == connection && $0.channel == send.channel }
            }
            if let index = waiting {
                pendingChannels[index].sends.append(send)
                continue
            }
            switch handOver(send, to: connection, &endpoint, &statistics, &events) {
            case .handed:
                break
            case .windowFull:
                statistics.sendsSuspended += 1
                pendingChannels.append(
                    PendingChannel(connection: connection, channel: send.channel, sends: [send], stalled: true))
                waiting = pendingChannels.count - 1
            case .connectionClosed:
                connectionClosed(connection)
                fail(send, with: .connectionClosed(connection), connection: connection, &endpoint, &statistics, &events)
            }
        }
    }

    /// Hands the messages of `pendingChannels[index]` to the endpoint until its window is full.
    private mutating func servicePendingChannel(
        at index: Int, _ endpoint: inout Endpoint, _ statistics: inout TransportStatistics,
        _ events: inout EventDelivery
    ) {
        // Taken out while it is worked on, so removing does not copy the deque.
        var pending = pendingChannels[index]
        pendingChannels[index].sends = []
        defer { pendingChannels[index] = pending }
        while let send = pending.sends.popFirst() {
            switch handOver(send, to: pending.connection, &endpoint, &statistics, &events) {
            case .handed:
                pending.stalled = false
            case .windowFull:
                pending.sends.prepend(send)
                if !pending.stalled {
                    pending.stalled = true
                    statistics.sendsSuspended += 1
                }
                return
            case .connectionClosed:
                // Senders still waiting for room on this connection are refused first, so they are not admitted
                // only to be reported as unsent.
                connectionClosed(pending.connection)
                fail(
                    send, with: .connectionClosed(pending.connection), connection: pending.connection, &endpoint,
                    &statistics, &events)
                while let failed = pending.sends.popFirst() {
                    fail(
                        failed, with: .connectionClosed(pending.connection), connection: pending.connection, &endpoint,
                        &statistics, &events)
                }
                return
            }
        }
    }

    /// Gives the allowance of the messages handed over (or failed) back to the queue and lets the admitted senders
    /// go; returns whether a drain must be scheduled.
    private mutating func releaseHanded() -> Bool {
        guard !handed.isEmpty else { return false }
        let (admitted, drain) = queue.release(handed)
        handed.removeAll(keepingCapacity: true)
        for continuation in admitted { continuation.resume(returning: nil) }
        return drain
    }

    /// Resolves a message that will never reach the endpoint: its sender gets `error` if it waits, otherwise the
    /// message is counted and reported as unsent. Its allowance is given back with the next release.
    private mutating func fail(
        _ send: PendingSend, with error: TransportError, connection: ConnectionID?, _ endpoint: inout Endpoint,
        _ statistics: inout TransportStatistics, _ events: inout EventDelivery
    ) {
        giveBack(send)
        guard !send.resolve(.failure(error)) else { return }
        statistics.messagesUnsent += 1
        statistics.bytesUnsent += send.message.count
        let peer: X25519PublicKey?
        let addressed: ConnectionID?
        switch send.destination {
        case .connection(let id):
            addressed = id
            peer = endpoint.peer(of: id)
        case .peer(let key):
            addressed = connection
            peer = key
        }
        events.reportUnsent(
            connection: addressed, peer: peer, channel: send.channel, bytes: send.message.count, tag: send.tag)
    }

    /// Notes the allowance of `send` for the next release (consecutive messages of one key are merged).
    private mutating func giveBack(_ send: PendingSend) {
        let key = send.key
        if !handed.isEmpty, handed[handed.count - 1].key == key {
            handed[handed.count - 1].bytes += send.message.count
            handed[handed.count - 1].messages += 1
        } else {
            handed.append(OutboundQueue.Release(key: key, bytes: send.message.count, messages: 1))
        }
    }
}
