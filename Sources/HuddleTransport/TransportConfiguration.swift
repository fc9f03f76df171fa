import HuddleWire

/// How a ``UDPEndpointDriver`` binds its socket and batches its I/O.
///
/// The defaults suit a server on Linux; tests turn the offloads off to exercise the fallback paths.
public struct TransportConfiguration: Sendable, Hashable {
    /// The address to bind: `"127.0.0.1"`, `"::1"`, `"0.0.0.0"`, `"::"` or a concrete interface address.
    public var host: String
    /// The UDP port to bind; 0 asks the system for an ephemeral port (read it from
    /// ``UDPEndpointDriver/localAddress``).
    public var port: Int
    /// Whether to coalesce same-destination, equal-size datagrams into one UDP GSO write (`UDP_SEGMENT`). Ignored
    /// (plain writes) when the kernel does not support it.
    public var segmentationOffload: Bool
    /// Whether to let the kernel glue received datagrams together (`UDP_GRO`); the driver splits them again by the
    /// reported segment size. Ignored (plain vector reads) when the kernel does not support it.
    public var receiveOffload: Bool
    /// Whether connections search for the largest datagram a direct path carries (Path MTU discovery, RFC 8899, up to
    /// the connection's `maxProbedDatagramSize`). It needs the don't-fragment bit, which the driver sets on Linux
    /// (`IP_MTU_DISCOVER` / `IPV6_MTU_DISCOVER` = `PMTUDISC_PROBE`: a datagram the route cannot carry is dropped,
    /// never fragmented); elsewhere, or when this is `false`, every datagram stays at the base size (1200 bytes).
    public var pathMTUDiscovery: Bool
    /// Whether the driver sends on its socket itself (Linux) rather than through SwiftNIO's channel. SwiftNIO closes
    /// a datagram socket when the kernel refuses one write (EPERM from a local firewall, for one), and the driver
    /// must then bind a new one, losing what both directions had queued; sent directly, a refused write costs its
    /// own datagrams only (counted in ``TransportStatistics/writesRefused``). Ignored elsewhere.
    public var directSends: Bool
    /// Datagrams read per `recvmmsg` call (1 disables vector reads).
    public var vectorReadMessageCount: Int
    /// Socket reads (each up to ``vectorReadMessageCount`` datagrams) per readiness event before the batch ends;
    /// transmits (ACKs included) are flushed once per batch, so smaller batches acknowledge sooner.
    ///
    /// 4 by default. SwiftNIO reads until the socket is empty or this count is reached, so a lone datagram costs a
    /// second `recvmmsg` that finds nothing; 1 saves that call but was measured worse where it matters: the round trip
    /// during a 100 MiB attachment on the same connection rose from about 1.09 to 1.34 ms (3 interleaved pairs, all
    /// worse), because the loop drains a busy socket 16 datagrams per pass instead of 64; the plain round trip did
    /// not move beyond the noise.
    public var readsPerBatch: Int
    /// The largest datagram accepted without receive offload; longer ones are truncated by the kernel and then fail
    /// authentication. Must cover what peers may send: ``WireLimits/maxDatagramSize`` (8972) by default, since their
    /// Path MTU discovery raises datagrams up to it where the path allows.
    public var maxReceiveDatagramSize: Int
    /// At most this many datagrams are taken from the endpoint per flush, so a large backlog yields to reads; the
    /// rest is sent from a follow-up task on the same event loop.
    public var maxDatagramsPerFlush: Int
    /// The most bytes of reliable messages the driver holds per connection and channel that the endpoint has not
    /// taken yet (queued by ``UDPEndpointDriver/enqueue(_:on:to:)`` or ``UDPEndpointDriver/send(_:on:to:)``, or
    /// waiting for the channel's send window); a sender that would exceed it waits. A single larger message is
    /// accepted when nothing else is held for its connection and channel.
    public var maxOutboundBytesPerChannel: Int
    /// The most such messages per connection and channel (bounds the memory of many tiny messages).
    public var maxOutboundMessagesPerChannel: Int
    /// `SO_RCVBUF` to request, or `nil` for the system default (the kernel caps it at `net.core.rmem_max`).
    public var socketReceiveBufferSize: Int?
    /// `SO_SNDBUF` to request, or `nil` for the system default (the kernel caps it at `net.core.wmem_max`).
    public var socketSendBufferSize: Int?

    /// The UDP GSO kernel limit on segments in one write (`UDP_MAX_SEGMENTS` on older kernels).
    public static let maxSegmentsPerWrite = 64
    /// The most payload bytes one GSO write may carry (an IP datagram is at most 64 KiB including headers).
    public static let maxBytesPerSegmentedWrite = 65_000
    /// The receive buffer slice per datagram when receive offload is on: the kernel glues up to 64 KiB.
    public static let offloadReceiveSliceSize = 65_536

    /// A configuration binding `host` and `port` with every batching feature the kernel supports.
    public init(host: String = "127.0.0.1", port: Int = 0) {
        self.host = host
        self.port = port
        self.segmentationOffload = true
        self.receiveOffload = true
        self.pathMTUDiscovery = true
        self.directSends = true
        self.vectorReadMessageCount = 16
        self.readsPerBatch = 4
        self.maxReceiveDatagramSize = WireLimits.maxDatagramSize
        self.maxDatagramsPerFlush = 256
        self.maxOutboundBytesPerChannel = 1 << 20
        self.maxOutboundMessagesPerChannel = 4_096
        self.socketReceiveBufferSize = 4 * 1024 * 1024
        self.socketSendBufferSize = 4 * 1024 * 1024
    }
}
