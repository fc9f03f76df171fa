import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Binds a new socket for an ``EndpointChannelHandler`` whose channel SwiftNIO closed underneath it.
///
/// SwiftNIO closes a datagram channel when `sendmsg` fails with anything but EMSGSIZE or EHOSTUNREACH: EPERM when a
/// local firewall drops the datagram, EACCES for a broadcast address, EINVAL for port 0, ENETUNREACH while a route is
/// missing. For a UDP mesh each of those concerns one datagram, so the endpoint (keys, connections, queues) carries on
/// over a fresh socket bound to the same address and port; what was lost meanwhile is recovered by the protocol.
/// On Linux the handler sends through ``DirectDatagramSender``, which only counts such errors, so this is left for
/// the sends SwiftNIO still makes (after the socket's buffer was full) and for read errors.
struct ChannelReplacement: Sendable {
    /// Attempts before giving up (the address may have been taken meanwhile); then the handler shuts down.
    static let maxAttempts = 20

    let loop: any EventLoop
    let transport: TransportConfiguration
    let receiveOffload: Bool
    /// Where the first socket was bound (with its real port).
    let address: SocketAddress
    /// Where the driver keeps its current channel.
    let channel: NIOLockedValueBox<any Channel>

    /// Starts replacing `handler`'s channel (called on the loop from `channelInactive`).
    func start(for handler: EndpointChannelHandler) {
        let bound = NIOLoopBound(handler, eventLoop: loop)
        // As a task, not from inside `channelInactive`: SwiftNIO is still tearing the old channel down.
        schedule(bound, attempt: 1)
    }

    private func schedule(_ bound: NIOLoopBound<EndpointChannelHandler>, attempt: Int) {
        // The first attempt on the next loop iteration (every datagram that arrives before the new socket is bound
        // is lost), later ones backing off up to 100 ms.
        let delay = TimeAmount.milliseconds(Int64(min(attempt - 1, 10)) * 10)
        let task = loop.scheduleTask(in: delay) {
            bind(bound, attempt: attempt)
        }
        // The loop is shutting down (its channels were closed for that reason): stop, which ends the event stream.
        task.futureResult.whenFailure { _ in bound.value.channelReplacementFailed() }
    }

    private func bind(_ bound: NIOLoopBound<EndpointChannelHandler>, attempt: Int) {
        guard !bound.value.isClosed else { return }
        bindChannel(for: bound)
            .whenComplete { result in
                switch result {
                case .success(let replacement):
                    self.channel.withLockedValue { $0 = replacement }
                    // Closed while binding: the driver already closed the old channel, so close this one.
                    if bound.value.isClosed { replacement.close(promise: nil) }
                case .failure:
                    if attempt < Self.maxAttempts {
                        schedule(bound, attempt: attempt + 1)
                    } else {
                        bound.value.channelReplacementFailed()
                    }
                }
            }
    }

    /// A new channel on ``address`` with `bound`'s handler in its pipeline (and its direct sender on the new socket).
    private func bindChannel(for bound: NIOLoopBound<EndpointChannelHandler>) -> EventLoopFuture<any Channel> {
        let bootstrap = UDPEndpointDriver.bootstrap(on: loop, transport: transport, receiveOffload: receiveOffload)
        #if os(Linux)
            if transport.directSends {
                let descriptor: CInt
                do {
                    descriptor = try DirectDatagramSender.boundSocket(to: address)
                } catch {
                    return loop.makeFailedFuture(error)
                }
                return
                    bootstrap
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            bound.value.directSender = DirectDatagramSender(descriptor: descriptor)
                            try channel.pipeline.syncOperations.addHandler(bound.value)
                        }
                    }
                    .withBoundSocket(descriptor)
            }
        #endif
        return
            bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(bound.value)
                }
            }
            .bind(to: address)
    }
}
