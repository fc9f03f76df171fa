import HuddleProtocol

/// Counters of what a ``UDPEndpointDriver`` moved, so batching and drops are visible.
public struct TransportStatistics: Sendable, Hashable {
    /// Datagrams handed to the endpoint (after splitting receive-offload reads).
    public var datagramsReceived = 0
    /// Bytes handed to the endpoint.
    public var bytesReceived = 0
    /// Datagrams written to the socket (a segmented write counts each segment).
    public var datagramsSent = 0
    /// Bytes written to the socket.
    public var bytesSent = 0
    /// Socket reads that carried several datagrams glued together by receive offload.
    public var coalescedReads = 0
    /// Read batches: bursts of reads ended by one `channelReadComplete`, after which transmits are flushed once.
    public var readBatches = 0
    /// Writes that carried more than one datagram as UDP GSO segments.
    public var segmentedWrites = 0
    /// Flushes to the socket.
    public var flushes = 0
    /// Flushes that stopped at ``TransportConfiguration/maxDatagramsPerFlush`` and yielded to reads.
    public var flushesAtLimit = 0
    /// Datagrams from a source address the driver cannot represent (not IPv4 or IPv6), dropped unread.
    public var unsupportedSourceDropped = 0
    /// Errors the channel reported (failed writes, ICMP errors on reads); none of them closes the driver.
    public var channelErrors = 0
    /// Writes the kernel refused (EPERM from a local firewall, EMSGSIZE for a Path MTU probe larger than the
    /// interface, ENETUNREACH while a route is missing, ...): their datagrams are lost and the socket stays open.
    public var writesRefused = 0
    /// Datagrams in ``writesRefused``.
    public var datagramsRefused = 0
    /// Writes queued in SwiftNIO because the socket's send buffer was full (sent when it is writable again).
    public var writesQueuedInChannel = 0
    /// Times the socket was replaced by a new one on the same address because SwiftNIO closed it after the kernel
    /// refused a datagram (EPERM from a firewall, EACCES, EINVAL, ENETUNREACH, ...).
    public var socketRebinds = 0
    /// Events handed to the handler installed with ``UDPEndpointDriver/handleEvents(maxEvents:maxBytes:_:)``.
    public var eventsDelivered = 0
    /// Times a channel's send window filled up while accepted messages still waited for it (they stay queued, and
    /// once the outbound queue's allowance is used up the senders wait too).
    public var sendsSuspended = 0
    /// Reliable messages accepted into the outbound queue (``UDPEndpointDriver/send(_:on:to:)`` and
    /// ``UDPEndpointDriver/enqueue(_:on:to:)``).
    public var messagesQueued = 0
    /// Senders that found their connection and channel's outbound allowance used up and waited for room
    /// (``TransportConfiguration/maxOutboundBytesPerChannel``, ``TransportConfiguration/maxOutboundMessagesPerChannel``).
    public var queueWaits = 0
    /// Messages accepted that the endpoint has not taken yet, at the moment of reading (queued, or waiting for their
    /// send window); per connection and channel at most ``TransportConfiguration/maxOutboundMessagesPerChannel``.
    public var outboundMessagesHeld = 0
    /// The bytes of ``outboundMessagesHeld``.
    public var outboundBytesHeld = 0
    /// Drains of the outbound queue that took messages: each hands everything queued since the previous one to the
    /// endpoint before one flush, so `messagesQueued / outboundDrains` is the average batch.
    public var outboundDrains = 0
    /// Accepted messages that never reached the endpoint because their connection closed (or their peer had no
    /// connection) first, or the driver closed; each is also reported as `EndpointEvent.unsent` while the event
    /// stream is open. Sends whose caller still waits (``UDPEndpointDriver/send(_:on:to:)``) fail instead and are not
    /// counted here.
    public var messagesUnsent = 0
    /// The bytes of ``messagesUnsent``.
    public var bytesUnsent = 0
    /// Bytes written to TCP connections to TURN servers (``TurnTransport/tcp``).
    public var turnStreamBytesSent = 0
    /// Bytes read from TCP connections to TURN servers.
    public var turnStreamBytesReceived = 0
    /// TCP connections to TURN servers that could not be made (refused, or no answer within 5 s).
    public var turnStreamConnectFailures = 0
    /// The endpoint's own counters (authentication failures, replays, handshakes, ...).
    public var endpoint: EndpointStatistics

    /// Received datagrams the endpoint dropped without effect (``EndpointStatistics/datagramsDropped``).
    public var datagramsDroppedByEndpoint: Int { endpoint.datagramsDropped }

    /// Zeroed transport counters alongside the endpoint's current ones.
    init(endpoint: EndpointStatistics) {
        self.endpoint = endpoint
    }
}
