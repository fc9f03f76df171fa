import HuddleProtocol
import Logging
import NIOCore

/// The event-loop half of a ``UDPEndpointDriver``: owns the ``Endpoint`` and feeds it the channel's datagrams, its
/// timer and the application's calls, then drains transmits, events and waiting sends.
///
/// It composes one part per job: ``DatagramReceiver`` (reads in), ``EventDelivery`` (events out to the installed
/// consumer), ``LoopTimer`` (the one timer), ``SendIntake`` (queued messages to the endpoint), ``TransmitBatch`` (a
/// flush's datagrams grouped into writes, which `EndpointChannelHandler+Transmit.swift` makes, directly through
/// ``DirectDatagramSender`` or through SwiftNIO) and socket replacement (``ChannelReplacement``). This file holds the
/// channel callbacks and the order they run in.
///
/// Threading: every member is touched only on the channel's event loop (NIO calls handler methods there, and the
/// driver reaches it only through a `NIOLoopBound`, which checks the loop on every access). That confinement is why
/// the non-`Sendable` ``Endpoint`` can live here.
///
/// Order after every input (read batch, timer, application call): hand events to the consumer first (taking a
/// message reopens flow-control credit, which may need a MAX_DATA), then take the sends queued in the
/// ``OutboundQueue`` and retry those waiting for their window, then flush transmits, then re-arm the timer to the
/// endpoint's new earliest deadline. Sends arriving between inputs are taken by one drain task per batch
/// (``drainOutbound()``), which does the same minus the events.
final class EndpointChannelHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    /// The settings resolved at bind time (offloads already checked against the kernel).
    struct Settings: Sendable {
        var segmentationOffload: Bool
        var receiveOffload: Bool
        var maxDatagramsPerFlush: Int
        /// Room for the largest datagram a connection may send (its Path MTU discovery ceiling) behind a relay header.
        var transmitSlotSize: Int
        /// Room for a base-size datagram behind a relay header: what the outbound buffer is first sized by.
        var baseSlotSize: Int
        var logger: Logger?
    }

    /// The protocol core.
    var endpoint: Endpoint
    /// Why handshake messages were dropped, for the log.
    var handshakeDrops: HandshakeDropReport
    let clock: DriverClock
    let settings: Settings
    var statistics: TransportStatistics
    var addresses = SocketAddressConverter()
    /// The channel context, set while the handler is in the pipeline.
    var context: ChannelHandlerContext?

    /// Reads to the endpoint, decrypted in a scratch buffer of its own.
    let receiver = DatagramReceiver()
    /// The datagrams of the flush in progress, grouped into runs that each become one write.
    var transmits = TransmitBatch(capacity: 0)
    var isFlushing = false
    var followUpFlushScheduled = false
    #if os(Linux)
        /// Sends on the socket itself while the channel is active (see ``DirectDatagramSender``); set with the
        /// channel, cleared when it goes inactive (SwiftNIO closes the descriptor, whose number may be reused).
        var directSender: DirectDatagramSender?
    #endif
    /// Writes handed to SwiftNIO (after the socket's buffer was full) that have not completed: while any are pending,
    /// later runs queue behind them there, so datagrams leave in order.
    var channelWritesPending = 0
    /// Set once the kernel refused a segmentation-offload write with EIO (a device that cannot checksum segments):
    /// later datagrams go out one per write.
    var segmentationOffloadFailed = false

    var timer = LoopTimer()
    /// The timers of the layer above, run by this handler's one timer.
    var timerClient: TimerClient?
    /// Events out to the consumer installed by ``UDPEndpointDriver/handleEvents(maxEvents:maxBytes:_:)``, with the
    /// driver's reports of unsent messages.
    var events = EventDelivery()

    /// The messages senders queued, on their way to the endpoint.
    var sends: SendIntake
    /// The event loop (for drain tasks, also between sockets).
    let loop: any EventLoop
    /// Set by ``close()`` or when the channel goes inactive: no more input is accepted.
    var isClosed = false
    /// Binds a new channel for this handler when SwiftNIO closed the current one after a refused send (see
    /// ``ChannelReplacement``); set by the driver right after binding.
    var replaceChannel: ((EndpointChannelHandler) -> Void)?
    /// Between the loss of a channel and the replacement becoming active: the old pipeline's removal of this
    /// handler must not shut the endpoint down.
    var awaitingChannel = false
    /// Set by ``UDPEndpointDriver/abandon()``: losing the channel is final.
    var abandoned = false
    /// The TCP connections to TURN servers (``TurnTransport/tcp``), `nil` while connecting.
    var turnStreams: [TurnServerAddress: (any Channel)?] = [:]

    init(
        endpoint: Endpoint, clock: DriverClock, settings: Settings, sendQueue: OutboundQueue, loop: any EventLoop
    ) {
        self.endpoint = endpoint
        self.clock = clock
        self.settings = settings
        self.sends = SendIntake(queue: sendQueue)
        self.loop = loop
        self.statistics = TransportStatistics(endpoint: endpoint.statistics)
        self.handshakeDrops = HandshakeDropReport(from: endpoint.statistics)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Known here when the handler joins a bound channel, else at channelActive.
        addresses.mapsIPv4 = context.channel.localAddress?.protocol == .inet6
        // Sized for base-size datagrams; it grows once if the paths confirm larger ones.
        transmits = TransmitBatch(
            capacity: settings.maxDatagramsPerFlush * settings.baseSlotSize, allocator: context.channel.allocator)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // A replaced channel's pipeline may let go of the handler after the replacement took it: ignore that one.
        guard context === self.context else { return }
        self.context = nil
        #if os(Linux)
            directSender = nil
        #endif
        if !awaitingChannel { shutDown() }
    }

    func channelActive(context: ChannelHandlerContext) {
        awaitingChannel = false
        addresses.mapsIPv4 = context.channel.localAddress?.protocol == .inet6
        context.fireChannelActive()
        // A replacement socket: send what queued up meanwhile and re-arm the timer.
        if !isClosed { afterInput() }
    }

    // MARK: - Input

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard !isClosed else { return }
        guard let source = SocketAddressConverter.networkAddress(envelope.remoteAddress) else {
            statistics.unsupportedSourceDropped += 1
            return
        }
        receiver.receive(
            envelope.data, segmentSize: envelope.metadata?.segmentSize, from: source, into: &endpoint, now: clock.now,
            statistics: &statistics)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        statistics.readBatches += 1
        guard !isClosed else { return }
        afterInput()
        if let logger = settings.logger { reportHandshakeDrops(to: logger) }
    }

    /// Logs why handshake messages were dropped since the last line (see ``HandshakeDropReport``).
    private func reportHandshakeDrops(to logger: Logger) {
        guard logger.logLevel <= .debug else { return }
        guard let drops = handshakeDrops.check(endpoint.statistics, now: clock.now) else { return }
        var metadata: Logger.Metadata = [:]
        for (reason, count) in drops { metadata[reason] = "\(count)" }
        logger.debug("handshake messages dropped (\(HandshakeDropReport.meaning))", metadata: metadata)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !isClosed {
            flushTransmits(budget: settings.maxDatagramsPerFlush)
            rearmTimer()
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // UDP errors (an ICMP port unreachable surfacing as ECONNREFUSED, a refused write) concern one datagram;
        // the protocol's loss recovery deals with the consequences, so the driver keeps running.
        statistics.channelErrors += 1
    }

    func channelInactive(context: ChannelHandlerContext) {
        #if os(Linux)
            // SwiftNIO has closed the descriptor: its number may belong to another file from now on.
            if context === self.context { directSender = nil }
        #endif
        guard !isClosed, !abandoned, let replaceChannel, context === self.context else {
            shutDown()
            context.fireChannelInactive()
            return
        }
        // Not closed by the driver: SwiftNIO closed the socket because the kernel refused one datagram (see
        // ``ChannelReplacement``). Keep the endpoint and carry on over a new socket on the same address.
        awaitingChannel = true
        self.context = nil
        statistics.socketRebinds += 1
        context.fireChannelInactive()
        replaceChannel(self)
    }

    /// No replacement socket could be bound: the endpoint stops as if the driver had been closed.
    func channelReplacementFailed() {
        awaitingChannel = false
        shutDown()
    }

    /// Runs after every input: events, queued and waiting sends, transmits, timer.
    func afterInput() {
        deliverEvents()
        serviceSends()
        // Messages that failed just now are reported at once, not at the next input.
        if events.hasUnsentReports { deliverEvents() }
        flushTransmits(budget: settings.maxDatagramsPerFlush)
        rearmTimer()
    }

    // MARK: - Timer

    /// Keeps the one timer armed at or before the earliest deadline of the endpoint and of the layer above.
    func rearmTimer() {
        // While the socket is not writable nothing could be sent anyway, and a paced deadline already in the past
        // would fire in a loop: the writability change re-arms instead.
        guard !isClosed, let context, context.channel.isWritable else { return }
        let clientDeadline = timerClient.flatMap { $0.deadline(clock.now) }
        guard let deadline = Instant.earliest(endpoint.nextDeadline, clientDeadline) else { return }
        timer.arm(at: deadline, clock: clock, on: context.eventLoop) { self.timerFired() }
    }

    private func timerFired() {
        timer.fired()
        guard !isClosed else { return }
        let now = clock.now
        endpoint.handleTimeout(now: now)
        if let timerClient, let due = timerClient.deadline(now), due <= now { timerClient.fire(&endpoint, now) }
        afterInput()
    }

    /// Installs (or with `nil` removes) the timers of the layer above; see ``TimerClient``.
    func installTimerClient(_ client: TimerClient?) {
        timerClient = client
        // A deadline the new client brings may be earlier than the one armed.
        timer.cancel()
        afterInput()
    }

    // MARK: - Events

    /// Hands events to the installed consumer while it wants more.
    func deliverEvents() {
        statistics.eventsDelivered += events.deliver(from: &endpoint, now: clock.now, closed: sends.connectionClosed)
    }

    /// Installs `consumer`: from now on events go to it.
    func installEventHandler(_ consumer: InstalledEventHandler) {
        events.install(consumer)
        guard !isClosed else { return }
        afterInput()
    }

    /// The installed consumer asked for more events.
    func handlerDemandResumed() {
        guard events.resume(), !isClosed else { return }
        afterInput()
    }

    // MARK: - Closing

    /// Closes every connection, flushes their CLOSE frames and the remaining events, and stops accepting input.
    /// The caller closes the channel afterwards.
    func close(reason: String) {
        guard !isClosed else { return }
        // Nothing more is accepted; what was accepted but not taken by the endpoint is reported below.
        failAllSends()
        let now = clock.now
        for id in endpoint.connectionIDs {
            endpoint.close(id, code: .noError, reason: reason, now: now)
        }
        // The router stops forwarding to a socket about to close (its deletion goes out with the CLOSEs).
        endpoint.releasePortMappings(now: now)
        // Every CLOSE goes out now, however many connections there are: closed connections send nothing else.
        flushTransmits(budget: .max)
        // The local `.closed` events are handed over whether or not the consumer wants more: they are its last.
        statistics.eventsDelivered += events.deliverFinal(from: &endpoint, now: now, closed: sends.connectionClosed)
        shutDown()
    }

    /// Stops the timer and fails waiting sends.
    private func shutDown() {
        guard !isClosed else { return }
        isClosed = true
        timer.cancel()
        failAllSends()
        closeTurnStreams()
    }

    /// The driver's counters with the endpoint's.
    var currentStatistics: TransportStatistics {
        var result = statistics
        result.endpoint = endpoint.statistics
        let counters = sends.queue.counters
        result.messagesQueued = counters.messagesQueued
        result.queueWaits = counters.queueWaits
        result.outboundMessagesHeld = counters.messagesHeld
        result.outboundBytesHeld = counters.bytesHeld
        return result
    }
}
