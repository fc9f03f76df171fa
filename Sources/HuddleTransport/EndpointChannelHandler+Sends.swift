import DequeModule
import HuddleCrypto
import HuddleProtocol
import HuddleWire

extension EndpointChannelHandler {
    /// The accepted messages for one connection and channel that wait for its send window, oldest first.
    struct PendingChannel {
        let connection: ConnectionID
        let channel: ChannelID
        var sends: Deque<PendingSend>
        /// Whether the head found the window full (counted once per stall in ``TransportStatistics/sendsSuspended``).
        var stalled = false
    }

    /// The drain task the first send after a drain schedules: hands everything queued to the endpoint, then sends.
    func drainOutbound() {
        guard !isClosed else { return }
        serviceSends()
        if events.hasUnsentReports { deliverEvents() }
        flushTransmits(budget: settings.maxDatagramsPerFlush)
        rearmTimer()
    }

    /// Hands the messages waiting for their window to the endpoint in order, as far as each channel's window allows,
    /// then takes the messages queued since the last drain and hands them over too (behind any still waiting on their
    /// channel); fails those whose connection closed or whose task was cancelled. Runs after every input too, because
    /// acknowledgements (which free the window) arrive as input.
    func serviceSends() {
        var index = 0
        while index < pendingChannels.count {
            servicePendingChannel(at: index)
            if pendingChannels[index].sends.isEmpty {
                pendingChannels.remove(at: index)
            } else {
                index += 1
            }
        }
        takeQueuedSends()
        releaseHandedSends()
    }

    /// What handing one message to the endpoint did.
    private enum Handover {
        case handed
        case windowFull
        case connectionClosed
    }

    /// Hands `send` to the endpoint on `connection`, resolving or failing it unless the window is full.
    private func handOver(_ send: PendingSend, to connection: ConnectionID) -> Handover {
        if let ticket = send.ticket, ticket.isCancelled {
            fail(send, with: .cancelled, connection: connection)
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
            fail(send, with: .messageTooLarge(size: size, limit: limit), connection: connection)
            return .handed
        } catch {
            fail(send, with: .protocolError(error), connection: connection)
            return .handed
        }
    }

    /// Takes the messages queued since the last drain and hands each to the endpoint (resolving peers to their
    /// current connection), or parks it behind earlier ones waiting on its channel.
    private func takeQueuedSends() {
        sendQueue.takeAll(into: &intake)
        guard !intake.isEmpty else { return }
        statistics.outboundDrains += 1
        // Most batches go to one peer and channel: resolve once per run.
        var resolvedPeer: X25519PublicKey?
        var resolvedConnection: ConnectionID?
        var waiting: Int?
        var waitingKey: (ConnectionID, ChannelID)?
        while let send = intake.popFirst() {
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
                    fail(send, with: .connectionClosed(ConnectionID(0)), connection: nil)
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
            switch handOver(send, to: connection) {
            case .handed:
                break
            case .windowFull:
                statistics.sendsSuspended += 1
                pendingChannels.append(
                    PendingChannel(connection: connection, channel: send.channel, sends: [send], stalled: true))
                waiting = pendingChannels.count - 1
            case .connectionClosed:
                connectionClosed(connection)
                fail(send, with: .connectionClosed(connection), connection: connection)
            }
        }
    }

    /// Hands the messages of `pendingChannels[index]` to the endpoint until its window is full.
    private func servicePendingChannel(at index: Int) {
        // Taken out while it is worked on, so removing does not copy the deque.
        var pending = pendingChannels[index]
        pendingChannels[index].sends = []
        defer { pendingChannels[index] = pending }
        while let send = pending.sends.popFirst() {
            switch handOver(send, to: pending.connection) {
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
                fail(send, with: .connectionClosed(pending.connection), connection: pending.connection)
                while let failed = pending.sends.popFirst() {
                    fail(failed, with: .connectionClosed(pending.connection), connection: pending.connection)
                }
                return
            }
        }
    }

    /// Gives the allowance of the messages handed over (or failed) back to the queue and lets the admitted senders go.
    private func releaseHandedSends() {
        guard !handed.isEmpty else { return }
        let (admitted, drain) = sendQueue.release(handed)
        handed.removeAll(keepingCapacity: true)
        for continuation in admitted { continuation.resume(returning: nil) }
        if drain { scheduleDrain() }
    }

    /// Resolves a message that will never reach the endpoint: its sender gets `error` if it waits, otherwise the
    /// message is reported as `EndpointEvent.unsent` and counted. Its allowance is given back with the next release.
    func fail(_ send: PendingSend, with error: TransportError, connection: ConnectionID?) {
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
    private func giveBack(_ send: PendingSend) {
        let key = send.key
        if !handed.isEmpty, handed[handed.count - 1].key == key {
            handed[handed.count - 1].bytes += send.message.count
            handed[handed.count - 1].messages += 1
        } else {
            handed.append(OutboundQueue.Release(key: key, bytes: send.message.count, messages: 1))
        }
    }

    /// Connection `id` is closed: senders waiting for room on it are refused, later sends to it fail at once.
    func connectionClosed(_ id: ConnectionID) {
        for waiter in sendQueue.connectionClosed(id) { waiter.refuse(.connectionClosed(id)) }
    }

    /// Schedules a drain task on the event loop (the queue said none is pending).
    func scheduleDrain() {
        loop.assumeIsolated().execute { self.drainOutbound() }
    }

    /// Fails the send holding `ticket` with ``TransportError/cancelled`` if it is still waiting on the event loop.
    func cancelSend(_ ticket: SendTicket) {
        for index in pendingChannels.indices {
            guard let position = pendingChannels[index].sends.firstIndex(where: { $0.ticket === ticket }) else {
                continue
            }
            let send = pendingChannels[index].sends.remove(at: position)
            fail(send, with: .cancelled, connection: pendingChannels[index].connection)
            if pendingChannels[index].sends.isEmpty { pendingChannels.remove(at: index) }
            releaseHandedSends()
            return
        }
    }

    /// Fails everything queued, waiting or on the event loop (the driver is closing): waiting senders get
    /// ``TransportError/driverClosed``, messages whose senders already returned are reported as unsent.
    func failAllSends() {
        let (entries, waiters) = sendQueue.close()
        for waiter in waiters { waiter.refuse(.driverClosed) }
        intake.append(contentsOf: entries)
        while let send = intake.popFirst() {
            fail(send, with: .driverClosed, connection: nil)
        }
        for pending in pendingChannels {
            for send in pending.sends { fail(send, with: .driverClosed, connection: pending.connection) }
        }
        pendingChannels.removeAll()
        handed.removeAll()
    }
}
