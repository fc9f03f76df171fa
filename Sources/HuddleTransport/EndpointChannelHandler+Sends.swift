import HuddleProtocol
import HuddleWire

extension EndpointChannelHandler {
    /// Queues `pending` behind earlier sends on the same connection and channel, and sends what fits now.
    func enqueueSend(_ pending: PendingSend) {
        guard !isClosed else {
            pending.continuation.resume(returning: .failure(.driverClosed))
            return
        }
        pendingSends.append(pending)
        serviceSends()
        if !pendingSends.isEmpty, pendingSends.last!.ticket === pending.ticket {
            statistics.sendsSuspended += 1
        }
        flushTransmits(budget: settings.maxDatagramsPerFlush)
        rearmTimer()
    }

    /// Hands waiting messages to the endpoint in order, as far as each channel's send window allows; fails those
    /// whose connection closed or whose task was cancelled. Runs after every input, because acknowledgements (which
    /// free the window) arrive as input.
    func serviceSends() {
        guard !pendingSends.isEmpty else { return }
        var index = 0
        while index < pendingSends.count {
            let pending = pendingSends[index]
            if pending.ticket.isCancelled {
                pendingSends.remove(at: index)
                pending.continuation.resume(returning: .failure(.cancelled))
                continue
            }
            // A message waiting earlier on the same channel keeps this one behind it (FIFO per channel).
            if pendingSends[..<index].contains(where: { $0.isOrdered(with: pending) }) {
                index += 1
                continue
            }
            guard let connection = endpoint.connection(pending.connection), connection.isOpen else {
                pendingSends.remove(at: index)
                pending.continuation.resume(returning: .failure(.connectionClosed(pending.connection)))
                continue
            }
            guard connection.canSend(size: pending.message.count, on: pending.channel) else {
                index += 1
                continue
            }
            do {
                let sequence = try endpoint.send(pending.message, on: pending.channel, to: pending.connection)
                pendingSends.remove(at: index)
                pending.continuation.resume(returning: .success(sequence))
            } catch .queueFull {
                index += 1
            } catch .connectionClosed {
                pendingSends.remove(at: index)
                pending.continuation.resume(returning: .failure(.connectionClosed(pending.connection)))
            } catch .messageTooLarge(let size, let limit) {
                pendingSends.remove(at: index)
                pending.continuation.resume(returning: .failure(.messageTooLarge(size: size, limit: limit)))
            } catch {
                pendingSends.remove(at: index)
                pending.continuation.resume(returning: .failure(.protocolError(error)))
            }
        }
    }

    /// Fails the send holding `ticket` with ``TransportError/cancelled`` if it is still waiting.
    func cancelSend(_ ticket: SendTicket) {
        guard let index = pendingSends.firstIndex(where: { $0.ticket === ticket }) else { return }
        let pending = pendingSends.remove(at: index)
        pending.continuation.resume(returning: .failure(.cancelled))
    }
}
