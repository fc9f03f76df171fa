import HuddleCrypto
import HuddleProtocol
import HuddleWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Runs one ``Endpoint`` on one UDP socket (a SwiftNIO `DatagramChannel`): the only place where Huddle's protocol
/// core meets sockets, clocks and the system RNG.
///
/// Threading: the endpoint lives on the channel's event loop and is only ever touched there; every method of the
/// driver hops to that loop, except ``enqueue(_:on:to:)`` / ``enqueue(_:on:toPeer:)``, which append to a
/// lock-protected outbound queue that one drain task per batch hands to the endpoint on the loop. The driver is
/// `Sendable` because it holds only immutable values, that queue, and a `NIOLoopBound` reference to the loop-confined
/// ``EndpointChannelHandler`` (checked on every access).
///
/// Hot path: reads are batched (vector reads, or UDP GRO split by segment size), each datagram is decrypted in a
/// reused buffer, events go without a thread switch to the consumer installed with
/// ``handleEvents(maxEvents:maxBytes:_:)``, and after each read batch or drain the pending transmits are written in
/// one flush (small messages queued together share packets), equal-size datagrams to one destination coalesced into a
/// UDP GSO write. See `docs/ARCHITECTURE.md` ("HuddleTransport").
///
/// Refused sends: SwiftNIO closes the socket when the kernel refuses a datagram (EPERM from a firewall, EACCES,
/// EINVAL, ENETUNREACH); the driver then binds a new one on the same address and carries on (`ChannelReplacement`).
///
/// Lifetime: call ``close()`` before shutting down the event loop group.
public final class UDPEndpointDriver: Sendable {
    /// The address the socket is bound to (with the real port when port 0 was requested).
    public let localAddress: NetworkAddress
    /// The endpoint's static key (what peers pass to `connect`).
    public let staticKey: X25519PublicKey
    /// Whether datagrams are sent with UDP GSO (configured and supported by the kernel).
    public let usesSegmentationOffload: Bool
    /// Whether datagrams are received with UDP GRO (configured and supported by the kernel).
    public let usesReceiveOffload: Bool
    /// Runs tasks that prefer it on the endpoint's event loop: what they send goes out and what they receive comes in
    /// without a thread switch (see ``EventLoopTaskExecutor``).
    public let taskExecutor: EventLoopTaskExecutor

    /// The event loop the endpoint lives on. An actor whose executor this loop is (`eventLoop.executor`) calls
    /// ``perform(_:)`` without a thread switch.
    public var eventLoop: any EventLoop { handler.eventLoop }

    /// The current channel: a new one replaces it when SwiftNIO closes the socket after a refused send.
    private let channel: NIOLockedValueBox<any Channel>
    private let handler: NIOLoopBound<EndpointChannelHandler>
    /// Reliable messages on their way to the event loop.
    private let outbound: OutboundQueue

    private init(
        channel: NIOLockedValueBox<any Channel>, handler: NIOLoopBound<EndpointChannelHandler>,
        outbound: OutboundQueue, localAddress: NetworkAddress,
        staticKey: X25519PublicKey, usesSegmentationOffload: Bool, usesReceiveOffload: Bool
    ) {
        self.channel = channel
        self.handler = handler
        self.outbound = outbound
        self.localAddress = localAddress
        self.staticKey = staticKey
        self.usesSegmentationOffload = usesSegmentationOffload
        self.usesReceiveOffload = usesReceiveOffload
        self.taskExecutor = EventLoopTaskExecutor(handler.eventLoop)
    }

    /// Binds a UDP socket as `transport` says and starts an endpoint with `configuration` on it, on one event loop
    /// of `group`.
    ///
    /// The driver reads the wall clock once here and replaces `configuration.wallClockAtOrigin` with it (instants
    /// count from the same moment), and seeds the endpoint's generator from the system CSPRNG.
    ///
    /// `logger` receives, at debug level, why handshake messages were dropped (by reason, at most one line a second;
    /// see `HandshakeDropReport`): a dropped initiation gets no reply, so that is where a failed join shows its cause.
    public static func bind(
        configuration: EndpointConfiguration, transport: TransportConfiguration = TransportConfiguration(),
        group: any EventLoopGroup, logger: Logger? = nil
    ) async throws(TransportError) -> UDPEndpointDriver {
        try validate(transport)
        let loop = group.next()
        let clock = DriverClock()
        let configuration = resolved(configuration, transport: transport, clock: clock)
        let gso = transport.segmentationOffload && System.supportsUDPSegmentationOffload
        let gro = transport.receiveOffload && System.supportsUDPReceiveOffload
        let settings = handlerSettings(
            for: configuration, segmentationOffload: gso, receiveOffload: gro, transport, logger)
        let outbound = OutboundQueue(
            limits: .init(
                bytes: transport.maxOutboundBytesPerChannel, messages: transport.maxOutboundMessagesPerChannel))
        let channel = try await openChannel(on: loop, transport: transport, receiveOffload: gro) {
            EndpointChannelHandler(
                endpoint: Endpoint(
                    configuration: configuration, generator: SystemRandomGenerator.seededProtocolGenerator()),
                clock: clock, settings: settings, sendQueue: outbound, loop: loop)
        }
        let (handler, bound, localAddress) = try await locateHandler(in: channel, on: loop, transport: transport)
        let channelBox = NIOLockedValueBox<any Channel>(channel)
        let replacement = ChannelReplacement(
            loop: loop, transport: transport, receiveOffload: gro, address: bound, channel: channelBox)
        try? await loop.submit { handler.value.replaceChannel = { replacement.start(for: $0) } }.get()
        return UDPEndpointDriver(
            channel: channelBox, handler: handler, outbound: outbound, localAddress: localAddress,
            staticKey: configuration.identity.agreementKey.publicKey, usesSegmentationOffload: gso,
            usesReceiveOffload: gro)
    }

    /// `configuration` as the endpoint runs it: its wall clock is the driver's, and its Path MTU discovery ceiling
    /// follows whether the socket can set the don't-fragment bit.
    private static func resolved(
        _ configuration: EndpointConfiguration, transport: TransportConfiguration, clock: DriverClock
    ) -> EndpointConfiguration {
        var adjusted = configuration
        adjusted.wallClockAtOrigin = clock.wallClockAtOrigin
        // Probing larger datagrams is only safe with the don't-fragment bit set (else the kernel fragments a probe
        // the route cannot carry and it arrives anyway).
        if !setsDontFragment(transport) {
            adjusted.connection.maxProbedDatagramSize = adjusted.connection.maxDatagramSize
        } else if adjusted.connection.maxProbedDatagramSize == nil {
            adjusted.connection.maxProbedDatagramSize = WireLimits.maxDatagramSize
        }
        return adjusted
    }

    /// The handler's settings: offloads as checked against the kernel, and transmit slots sized for the largest
    /// datagram the endpoint may send behind a relay header.
    private static func handlerSettings(
        for configuration: EndpointConfiguration, segmentationOffload: Bool, receiveOffload: Bool,
        _ transport: TransportConfiguration, _ logger: Logger?
    ) -> EndpointChannelHandler.Settings {
        let connection = configuration.connection
        return EndpointChannelHandler.Settings(
            segmentationOffload: segmentationOffload, receiveOffload: receiveOffload,
            maxDatagramsPerFlush: transport.maxDatagramsPerFlush,
            transmitSlotSize: max(
                connection.maxDatagramSize, connection.maxProbedDatagramSize ?? 0, HandshakeInitiation.encodedLength)
                + RelayEnvelope.headerLength,
            baseSlotSize: max(connection.maxDatagramSize, HandshakeInitiation.encodedLength)
                + RelayEnvelope.headerLength,
            logger: logger)
    }

    /// Binds the socket as `transport` says, with a handler from `makeHandler` in its pipeline.
    private static func openChannel(
        on loop: any EventLoop, transport: TransportConfiguration, receiveOffload: Bool,
        makeHandler: @escaping @Sendable () -> EndpointChannelHandler
    ) async throws(TransportError) -> any Channel {
        do {
            #if os(Linux)
                // The driver binds the socket itself so it can send on it directly (see DirectDatagramSender).
                let descriptor: CInt? =
                    if transport.directSends {
                        try DirectDatagramSender.boundSocket(
                            to: SocketAddress.makeAddressResolvingHost(transport.host, port: transport.port))
                    } else {
                        nil
                    }
            #endif
            let bootstrap = bootstrap(on: loop, transport: transport, receiveOffload: receiveOffload)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = makeHandler()
                        #if os(Linux)
                            handler.directSender = descriptor.map(DirectDatagramSender.init(descriptor:))
                        #endif
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
            #if os(Linux)
                if let descriptor { return try await bootstrap.withBoundSocket(descriptor).get() }
            #endif
            return try await bootstrap.bind(host: transport.host, port: transport.port).get()
        } catch {
            throw .binding(error, host: transport.host, port: transport.port)
        }
    }

    /// The handler in `channel`'s pipeline, bound to its loop, with the address the socket got; closes the channel
    /// when either is missing.
    private static func locateHandler(
        in channel: any Channel, on loop: any EventLoop, transport: TransportConfiguration
    ) async throws(TransportError) -> (NIOLoopBound<EndpointChannelHandler>, SocketAddress, NetworkAddress) {
        let handler: NIOLoopBound<EndpointChannelHandler>
        do {
            handler = try await loop.submit {
                NIOLoopBound(
                    try channel.pipeline.syncOperations.handler(type: EndpointChannelHandler.self), eventLoop: loop)
            }.get()
        } catch {
            try? await channel.close()
            throw .bindFailed(host: transport.host, port: transport.port, reason: "handler missing: \(error)")
        }
        guard let bound = channel.localAddress, let localAddress = SocketAddressConverter.networkAddress(bound) else {
            try? await channel.close()
            throw .bindFailed(host: transport.host, port: transport.port, reason: "not an IPv4 or IPv6 address")
        }
        return (handler, bound, localAddress)
    }

    /// A bootstrap with the socket options `transport` asks for (no channel initializer yet).
    static func bootstrap(
        on loop: any EventLoop, transport: TransportConfiguration, receiveOffload gro: Bool
    ) -> DatagramBootstrap {
        let messageCount = max(transport.vectorReadMessageCount, 1)
        // Vector reads cut ONE buffer into `messageCount` equal slices; each must hold the largest datagram (GRO:
        // up to 64 KiB of glued datagrams), or the kernel silently truncates.
        let slice = gro ? TransportConfiguration.offloadReceiveSliceSize : transport.maxReceiveDatagramSize
        // No SO_REUSEADDR: on Linux it lets a second UDP socket bind a port another one holds, and the two then share
        // its datagrams. A replaced socket (ChannelReplacement) binds only after the old one closed.
        var bootstrap = DatagramBootstrap(group: loop)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: messageCount * slice))
            .channelOption(.maxMessagesPerRead, value: UInt(transport.readsPerBatch))
            // Generous watermarks: one flush may queue a few hundred KiB before the kernel takes it.
            .channelOption(.writeBufferWaterMark, value: .init(low: 1 << 20, high: 4 << 20))
        if messageCount > 1 {
            bootstrap = bootstrap.channelOption(.datagramVectorReadMessageCount, value: messageCount)
        }
        if let size = transport.socketReceiveBufferSize {
            bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(size))
        }
        if let size = transport.socketSendBufferSize {
            bootstrap = bootstrap.channelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(size))
        }
        if gro {
            bootstrap =
                bootstrap
                .channelOption(.datagramReceiveOffload, value: true)
                .channelOption(.datagramReceiveSegmentSize, value: true)
        }
        #if os(Linux)
            if setsDontFragment(transport) {
                // PMTUDISC_PROBE: the don't-fragment bit on every datagram, and the kernel's own path MTU estimate
                // (learned from ICMP, which an attacker can forge) ignored; a datagram larger than the interface's MTU
                // fails to send (EMSGSIZE, which SwiftNIO reports for that write only) and counts as a lost probe.
                // An IPv6 socket carries IPv4 too (v4-mapped peers on a dual-stack "::"), and that traffic follows
                // the IPv4 option: an IPv6 socket gets both.
                let ipv4 = ChannelOptions.Types.SocketOption(level: .ip, name: .init(rawValue: IP_MTU_DISCOVER))
                bootstrap = bootstrap.channelOption(ipv4, value: Int(IP_PMTUDISC_PROBE))
                if transport.host.contains(":") {
                    let ipv6 = ChannelOptions.Types.SocketOption(
                        level: .ipv6, name: .init(rawValue: IPV6_MTU_DISCOVER))
                    bootstrap = bootstrap.channelOption(ipv6, value: Int(IPV6_PMTUDISC_PROBE))
                }
            }
        #endif
        return bootstrap
    }

    /// Whether the socket gets the don't-fragment bit that Path MTU discovery needs (see
    /// ``TransportConfiguration/pathMTUDiscovery``).
    static func setsDontFragment(_ transport: TransportConfiguration) -> Bool {
        #if os(Linux)
            return transport.pathMTUDiscovery
        #else
            return false
        #endif
    }

    private static func validate(_ transport: TransportConfiguration) throws(TransportError) {
        guard (0...65_535).contains(transport.port) else {
            throw .invalidConfiguration("port \(transport.port) is outside 0...65535")
        }
        guard transport.readsPerBatch > 0 else {
            throw .invalidConfiguration("readsPerBatch must be positive")
        }
        guard transport.maxDatagramsPerFlush > 0 else {
            throw .invalidConfiguration("maxDatagramsPerFlush must be positive")
        }
        guard transport.maxReceiveDatagramSize >= HandshakeInitiation.encodedLength else {
            throw .invalidConfiguration("maxReceiveDatagramSize must hold a 152-byte handshake initiation")
        }
        guard transport.maxOutboundBytesPerChannel > 0, transport.maxOutboundMessagesPerChannel > 0 else {
            throw .invalidConfiguration("the outbound queue limits must be positive")
        }
    }

    // MARK: - Application API

    /// Runs `body` on the event loop with exclusive access to the endpoint and the current instant, then sends
    /// whatever it queued, hands out events and re-arms the timer. Throws ``TransportError/driverClosed`` after
    /// ``close()``, or whatever `body` throws (its effects up to the throw still apply).
    ///
    /// Called on the event loop (from an actor whose executor it is, or a task preferring ``taskExecutor``), `body`
    /// runs at once, without a hop (the method runs on its caller's executor: `nonisolated(nonsending)`): Swift
    /// concurrency runs such jobs as loop tasks of their own, never inside the
    /// handler's reads or timers, so the endpoint is not in use.
    nonisolated(nonsending) public func perform<Result: Sendable>(
        _ body: @escaping @Sendable (inout Endpoint, Instant) throws -> Result
    ) async throws -> Result {
        let handler = self.handler
        if handler.eventLoop.inEventLoop { return try Self.run(body, on: handler) }
        return try await handler.eventLoop.submit { try Self.run(body, on: handler) }.get()
    }

    /// Runs `body` on the event loop like ``perform(_:)`` (followed by the same flush and re-arm), without waiting
    /// for it: for a thread that must not block, such as a file worker handing its results back. Dropped after
    /// ``close()``.
    public func execute(_ body: @escaping @Sendable (inout Endpoint, Instant) -> Void) {
        let handler = self.handler
        handler.eventLoop.execute { _ = try? Self.run(body, on: handler) }
    }

    /// ``perform(_:)``'s body on the loop: refused after ``close()``, then followed by the flush and re-arm every
    /// input gets.
    private static func run<Result>(
        _ body: (inout Endpoint, Instant) throws -> Result, on handler: NIOLoopBound<EndpointChannelHandler>
    ) throws -> Result {
        let core = handler.value
        guard !core.isClosed else { throw TransportError.driverClosed }
        defer { core.afterInput() }
        return try body(&core.endpoint, core.clock.now)
    }

    /// Hands the endpoint's events to `handler` on the event loop from now on: after every input, all available
    /// events in batches of at most `maxEvents` events and `maxBytes` message bytes, while the handler wants more
    /// (see ``EndpointEventHandler``). This lets a consumer react to events where the endpoint lives, without a round
    /// trip per event; it passes on what concerns other threads itself. It is the driver's one way out for events.
    ///
    /// Until a handler is installed, events wait in the endpoint (messages there withhold flow-control credit from
    /// the peers, as when the handler wants no more), and the first call hands them over. Install it once; a second
    /// call replaces the first. Throws ``TransportError/driverClosed`` after ``close()``.
    public func handleEvents(
        maxEvents: Int = 64, maxBytes: Int = 1 << 20, _ handler: @escaping EndpointEventHandler
    ) async throws(TransportError) {
        let bound = self.handler
        let installed = InstalledEventHandler(body: handler, maxEvents: max(maxEvents, 1), maxBytes: max(maxBytes, 1))
        do {
            try await bound.eventLoop.submit {
                guard !bound.value.isClosed else { throw TransportError.driverClosed }
                bound.value.installEventHandler(installed)
            }.get()
        } catch {
            throw .driverClosed
        }
    }

    /// Runs `client`'s timers on the driver's one event-loop timer (see ``TimerClient``), replacing any installed
    /// before; `nil` removes it.
    public func setTimerClient(_ client: TimerClient?) async throws(TransportError) {
        let bound = self.handler
        do {
            try await bound.eventLoop.submit {
                guard !bound.value.isClosed else { throw TransportError.driverClosed }
                bound.value.installTimerClient(client)
            }.get()
        } catch {
            throw .driverClosed
        }
    }

    /// Resumes handing events to the handler installed with ``handleEvents(maxEvents:maxBytes:_:)`` after it returned
    /// `false`. Returns at once (the event loop resumes asynchronously); harmless when it already wants more.
    public func resumeEvents() {
        let handler = self.handler
        handler.eventLoop.execute { handler.value.handlerDemandResumed() }
    }

    /// Authorises a peer (see ``Endpoint/addPeer(_:)``).
    @_spi(Testing) public func addPeer(_ credentials: PeerCredentials) async throws {
        try await perform { endpoint, _ in try endpoint.addPeer(credentials) }
    }

    /// The connection to `peer` at `address`, created and its handshake started if there is none (see
    /// ``Endpoint/connect(to:at:now:)``). The installed event handler sees `.connected`.
    @_spi(Testing) public func connect(
        to peer: X25519PublicKey, at address: NetworkAddress
    ) async throws -> ConnectionID {
        try await perform { endpoint, now in try endpoint.connect(to: peer, at: address, now: now) }
    }

    /// Queues a reliable message on `channel` of `connection` and waits until the endpoint has taken it, returning
    /// its sequence number (what ``EndpointEvent/delivered(_:channel:sequence:)`` later names). Waits while the
    /// channel's send window is full (it reopens as the peer acknowledges earlier messages). Sends on one channel keep
    /// their order, also while waiting, and also relative to ``enqueue(_:on:to:)``.
    ///
    /// Each call waits for a round trip to the event loop; to send many messages quickly, use
    /// ``enqueue(_:on:to:)``, which returns once the message is queued and lets the driver coalesce it with others.
    ///
    /// Throws ``TransportError/messageTooLarge(size:limit:)`` above 256 KiB (before waiting),
    /// ``TransportError/connectionClosed(_:)`` if the connection is or becomes closed before the endpoint took the
    /// message, ``TransportError/driverClosed`` after ``close()``, ``TransportError/cancelled`` if the task is
    /// cancelled before the endpoint took it (the message is then not sent). Never fails merely because the window is
    /// full. For the benchmark and tests (`@_spi(Testing)`): a node sends through ``enqueue(_:on:toPeer:tag:)``.
    @discardableResult
    @_spi(Testing) public func send(
        _ message: [UInt8], on channel: ChannelID, to connection: ConnectionID
    ) async throws(TransportError) -> MessageSequence {
        guard message.count <= WireLimits.maxMessageSize else {
            throw .messageTooLarge(size: message.count, limit: WireLimits.maxMessageSize)
        }
        let ticket = SendTicket()
        let (handler, outbound) = (self.handler, self.outbound)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let send = PendingSend(
                    message: message, channel: channel, destination: .connection(connection), ticket: ticket,
                    completion: continuation)
                switch outbound.offer(send) {
                case .accepted(let scheduleDrain):
                    if scheduleDrain { Self.scheduleDrain(handler) }
                case .refused(let error):
                    continuation.resume(returning: .failure(error))
                case .full:
                    switch outbound.wait(.init(send: send, ticket: ticket, admission: nil)) {
                    case .accepted(let scheduleDrain):
                        if scheduleDrain { Self.scheduleDrain(handler) }
                    case .waiting:
                        break
                    case .refused(let error):
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            ticket.cancel()
            if let waiter = outbound.removeWaiter(ticket) {
                waiter.refuse(.cancelled)
            } else {
                handler.eventLoop.execute { handler.value.cancelSend(ticket) }
            }
        }
        return try result.get()
    }

    /// Queues a reliable message on `channel` of `connection` and returns as soon as the driver's outbound queue has
    /// accepted it, without waiting for the event loop: messages sent in quick succession are handed to the endpoint
    /// together by one drain task and coalesced into packets before one flush.
    ///
    /// Guarantees: FIFO per connection and channel (also across waiting, and together with
    /// ``send(_:on:to:)``); waits only while the connection and channel already hold
    /// ``TransportConfiguration/maxOutboundBytesPerChannel`` bytes or
    /// ``TransportConfiguration/maxOutboundMessagesPerChannel`` messages that the endpoint has not taken (which
    /// happens when the send window stays full: the peer reads slowly or the path is slow), never fails for that.
    /// An accepted message is never lost silently: if its connection closes (or the driver closes) before the
    /// endpoint takes it, it is reported as ``EndpointEvent/unsent(_:)`` to the installed event handler and counted in
    /// ``TransportStatistics/messagesUnsent``; once the endpoint took it, the connection's
    /// ``EndpointEvent/closed(_:peer:reason:undelivered:)`` lists it if it was not acknowledged.
    ///
    /// Throws ``TransportError/messageTooLarge(size:limit:)`` above 256 KiB (at once),
    /// ``TransportError/connectionClosed(_:)`` if the connection is known to be closed when the message is offered
    /// or while its sender waits for room, ``TransportError/driverClosed`` after ``close()``,
    /// ``TransportError/cancelled`` if the task is cancelled before the message is accepted (then it is not sent).
    /// For the benchmark and tests (`@_spi(Testing)`): a node sends by peer, ``enqueue(_:on:toPeer:tag:)``.
    @_spi(Testing) public func enqueue(
        _ message: [UInt8], on channel: ChannelID, to connection: ConnectionID
    ) async throws(TransportError) {
        try await enqueue(message, on: channel, destination: .connection(connection))
    }

    /// Queues a reliable message on `channel` for whatever connection to `peer` the endpoint has when the queue is
    /// drained on the event loop (so a peer that reconnected is reached on its new connection), and returns once the
    /// queue accepted it. `tag` (0: none) comes back with the message's `delivered` event, or in the report that it
    /// was not delivered (the close's undelivered list, or an unsent report). Otherwise as ``enqueue(_:on:to:)``; if the peer has no connection when the message is
    /// drained, it is reported as ``EndpointEvent/unsent(_:)``.
    public func enqueue(
        _ message: [UInt8], on channel: ChannelID, toPeer peer: X25519PublicKey, tag: UInt64 = 0
    ) async throws(TransportError) {
        try await enqueue(message, on: channel, destination: .peer(peer), tag: tag)
    }

    private func enqueue(
        _ message: [UInt8], on channel: ChannelID, destination: OutboundDestination, tag: UInt64 = 0
    ) async throws(TransportError) {
        guard message.count <= WireLimits.maxMessageSize else {
            throw .messageTooLarge(size: message.count, limit: WireLimits.maxMessageSize)
        }
        if Task.isCancelled { throw .cancelled }
        var send = PendingSend(
            message: message, channel: channel, destination: destination, ticket: nil, completion: nil)
        send.tag = tag
        switch outbound.offer(send) {
        case .accepted(let scheduleDrain):
            if scheduleDrain { Self.scheduleDrain(handler) }
            return
        case .refused(let error):
            throw error
        case .full:
            break
        }
        let ticket = SendTicket()
        let (handler, outbound) = (self.handler, self.outbound)
        let refusal: TransportError? = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                var waiting = PendingSend(
                    message: message, channel: channel, destination: destination, ticket: ticket, completion: nil)
                waiting.tag = tag
                switch outbound.wait(.init(send: waiting, ticket: ticket, admission: continuation)) {
                case .accepted(let scheduleDrain):
                    if scheduleDrain { Self.scheduleDrain(handler) }
                    continuation.resume(returning: nil)
                case .waiting:
                    break
                case .refused(let error):
                    continuation.resume(returning: error)
                }
            }
        } onCancel: {
            ticket.cancel()
            outbound.removeWaiter(ticket)?.refuse(.cancelled)
        }
        if let refusal { throw refusal }
    }

    private static func scheduleDrain(_ handler: NIOLoopBound<EndpointChannelHandler>) {
        handler.eventLoop.execute { handler.value.drainOutbound() }
    }

    /// Queues an unreliable datagram (see ``Endpoint/sendDatagram(_:on:to:)``): never waits; the oldest queued
    /// datagrams are dropped when too many wait.
    public func sendDatagram(_ bytes: [UInt8], on channel: ChannelID, to connection: ConnectionID) async throws {
        try await perform { endpoint, _ in try endpoint.sendDatagram(bytes, on: channel, to: connection) }
    }

    /// The driver's counters together with the endpoint's.
    public func statistics() async throws(TransportError) -> TransportStatistics {
        let handler = self.handler
        do {
            return try await handler.eventLoop.submit { handler.value.currentStatistics }.get()
        } catch {
            throw .driverClosed
        }
    }

    /// Closes gracefully: every connection sends CLOSE (peers see `.closed`), waiting sends fail with
    /// ``TransportError/driverClosed``, the local `.closed` events are handed to the installed event handler (its
    /// last call), and the socket is closed. Idempotent.
    public func close() async {
        let handler = self.handler
        try? await handler.eventLoop.submit { handler.value.close(reason: "endpoint closed") }.get()
        try? await channel.withLockedValue { $0 }.close()
    }

    /// Closes the socket abruptly, as a crash or a pulled cable would: no CLOSE goes out, so peers only notice
    /// through their idle timeout. Waiting sends fail as after ``close()``; the event handler is not called again.
    ///
    /// For tests of failure detection only (`@_spi(Testing) import HuddleTransport`); applications call ``close()``.
    @_spi(Testing)
    public func abandon() async {
        // Closing the channel without `close(reason:)` first: the handler's `channelInactive` stops the endpoint
        // without flushing anything (and, being told so, does not replace the socket).
        let handler = self.handler
        try? await handler.eventLoop.submit { handler.value.abandoned = true }.get()
        try? await channel.withLockedValue { $0 }.close()
    }
}
