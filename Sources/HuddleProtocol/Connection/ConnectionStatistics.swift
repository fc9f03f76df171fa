/// Counters one connection keeps, for diagnostics and `/peers`.
public struct ConnectionStatistics: Sendable, Hashable {
    /// Packets sent (all kinds).
    public var packetsSent = 0
    /// Packets received and authenticated.
    public var packetsReceived = 0
    /// Packets declared lost.
    public var packetsLost = 0
    /// Packets declared lost that the peer later acknowledged (reordered, not lost); included in ``packetsLost``.
    public var spuriousLosses = 0
    /// Congestion window reductions undone because every loss behind them was spurious.
    public var congestionEventsUndone = 0
    /// Bytes of datagrams sent.
    public var bytesSent = 0
    /// Bytes of datagrams received.
    public var bytesReceived = 0
    /// Reliable messages delivered to the application.
    public var messagesDelivered = 0
    /// Unreliable datagrams dropped from a full send queue.
    public var datagramsDropped = 0
    /// Completed handshakes (the first one and every rekey).
    public var handshakes = 0
    /// Times the receive window doubled (flow-control auto-tuning).
    public var receiveWindowIncreases = 0
}
