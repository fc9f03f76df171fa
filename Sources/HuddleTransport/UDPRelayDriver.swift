import HuddleCrypto
import HuddleProtocol
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Runs a ``RelayServer`` on a UDP socket: every datagram is handled on the channel's event loop, forwarded packets
/// go out in the buffer they arrived in (rewritten in place), and the relay's replies follow.
public final class UDPRelayDriver: Sendable {
    /// The bound address.
    public let localAddress: NetworkAddress
    /// The relay's static key (its challenges carry it; clients need not know it beforehand).
    public let staticKey: X25519PublicKey
    /// Who registers and whose registration ends, as the relay sees it (``RelayServerEvent``), until ``close()``.
    /// It keeps at most ``ProtocolLimits/relayServerEventQueueLimit`` unread events, dropping the oldest.
    public let events: AsyncStream<RelayServerEvent>
    private let channel: any Channel
    private let statisticsBox: NIOLockedValueBox<RelayServerStatistics>
    private let registrations: NIOLockedValueBox<Int>

    private init(
        channel: any Channel, localAddress: NetworkAddress, staticKey: X25519PublicKey,
        statistics: NIOLockedValueBox<RelayServerStatistics>, registrations: NIOLockedValueBox<Int>,
        events: AsyncStream<RelayServerEvent>
    ) {
        self.channel = channel
        self.localAddress = localAddress
        self.staticKey = staticKey
        self.statisticsBox = statistics
        self.registrations = registrations
        self.events = events
    }

    /// Binds `host:port` and starts relaying with `configuration`.
    public static func bind(
        host: String, port: Int, configuration: RelayServerConfiguration, group: any EventLoopGroup
    ) async throws(TransportError) -> UDPRelayDriver {
        let statistics = NIOLockedValueBox(RelayServerStatistics())
        let registrations = NIOLockedValueBox(0)
        let clock = DriverClock()
        let (events, eventSink) = AsyncStream.makeStream(
            of: RelayServerEvent.self,
            bufferingPolicy: .bufferingNewest(ProtocolLimits.relayServerEventQueueLimit))
        // No SO_REUSEADDR: a second relay on the port would silently share its datagrams (see UDPEndpointDriver).
        let bootstrap = DatagramBootstrap(group: group)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 2048))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // Made on the loop that owns it: the relay core is not Sendable and never leaves that loop.
                    var random = SystemRandomGenerator.seededProtocolGenerator()
                    let relay = RelayServer(configuration: configuration, generator: &random)
                    try channel.pipeline.syncOperations.addHandler(
                        RelayHandler(
                            relay: relay, clock: clock, statistics: statistics, registrations: registrations,
                            events: eventSink))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: host, port: port).get()
        } catch {
            eventSink.finish()
            throw .binding(error, host: host, port: port)
        }
        guard let local = channel.localAddress.flatMap(SocketAddressConverter.networkAddress) else {
            try? await channel.close()
            eventSink.finish()
            throw .bindFailed(host: host, port: port, reason: "the socket has no local address")
        }
        return UDPRelayDriver(
            channel: channel, localAddress: local, staticKey: configuration.identity.agreementKey.publicKey,
            statistics: statistics,
            registrations: registrations, events: events)
    }

    /// The relay's counters now.
    public var statistics: RelayServerStatistics { statisticsBox.withLockedValue { $0 } }

    /// Clients registered now.
    public var registrationCount: Int { registrations.withLockedValue { $0 } }

    /// Closes the socket and finishes ``events``.
    public func close() async {
        try? await channel.close()
    }
}

/// The relay's channel handler: owns the ``RelayServer`` (only the event loop touches it).
private final class RelayHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private var relay: RelayServer
    private let clock: DriverClock
    private let statistics: NIOLockedValueBox<RelayServerStatistics>
    private let registrations: NIOLockedValueBox<Int>
    private let events: AsyncStream<RelayServerEvent>.Continuation
    private var addresses = SocketAddressConverter()
    private var expiryTimer: RepeatedTask?

    init(
        relay: RelayServer, clock: DriverClock, statistics: NIOLockedValueBox<RelayServerStatistics>,
        registrations: NIOLockedValueBox<Int>, events: AsyncStream<RelayServerEvent>.Continuation
    ) {
        self.relay = relay
        self.clock = clock
        self.statistics = statistics
        self.registrations = registrations
        self.events = events
    }

    func channelActive(context: ChannelHandlerContext) {
        addresses.mapsIPv4 = context.channel.localAddress?.protocol == .inet6
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // An idle relay receives nothing, so expiry needs a timer of its own to be noticed and reported.
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        expiryTimer = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            handler.value.expire()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        expiryTimer?.cancel()
        expiryTimer = nil
        events.finish()
    }

    private func expire() {
        relay.handleTimeout(now: clock.now)
        publish()
    }

    /// Hands the relay's events and counters to the driver's owner.
    private func publish() {
        while let event = relay.pollEvent() { events.yield(event) }
        let snapshot = relay.statistics
        let count = relay.registrationCount
        statistics.withLockedValue { $0 = snapshot }
        registrations.withLockedValue { $0 = count }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var envelope = unwrapInboundIn(data)
        guard let source = SocketAddressConverter.networkAddress(envelope.remoteAddress) else { return }
        let now = clock.now
        let destination = envelope.data.withUnsafeMutableReadableBytes { bytes in
            relay.handle(datagram: bytes, from: source, now: now)
        }
        if let destination {
            let address = addresses.socketAddress(for: destination)
            context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: address, data: envelope.data)), promise: nil)
        }
        while let (replyTo, datagram) = relay.pollTransmit() {
            let buffer = context.channel.allocator.buffer(bytes: datagram)
            let address = addresses.socketAddress(for: replyTo)
            context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: address, data: buffer)), promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        publish()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A send to an unreachable client (ICMP) must not stop the relay for the others.
    }
}
