/// Counters one connection keeps, for diagnostics and `/peers`.
public struct ConnectionStatistics: Sendable, Hashable {
    /// Packets sent (all kinds).
    public var packetsSent = 0
    /// Packets received and authenticated.
    public var packetsReceived = 0
    /// Packets declared lost on the connection's path (path probes and Path MTU probes are counted apart, in
    /// ``pathProbesLost`` and ``pathMTUProbesLost``).
    public var packetsLost = 0
    /// Packets declared lost that the peer later acknowledged (reordered, not lost); included in ``packetsLost``.
    public var spuriousLosses = 0
    /// Times the connection ran again after a stall of its process (see ``ProtocolLimits/stallTolerance``).
    public var stallsDetected = 0
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
    /// Message fragments queued to go a second time at once because their channel is duplicated
    /// (``ConnectionConfiguration/duplicatedChannels``); a copy whose original was acknowledged first is not sent.
    public var fragmentsDuplicated = 0
    /// Completed handshakes (the first one and every rekey).
    public var handshakes = 0
    /// Keypairs retired because too many packets failed authentication under them
    /// (``ConnectionConfiguration/maxAuthenticationFailuresPerKeypair``).
    public var keypairsExhausted = 0
    /// Times the receive window doubled (flow-control auto-tuning).
    public var receiveWindowIncreases = 0
    /// Times the connection moved to another route (the peer migrated, hole punching, or falling back).
    public var migrations = 0
    /// Routes validated by a PATH_RESPONSE.
    public var pathsValidated = 0
    /// Routes whose validation failed (the connection went back to the previous route when it was the current one).
    public var pathValidationFailures = 0
    /// PATH_CHALLENGE and PATH_RESPONSE packets sent.
    public var pathProbesSent = 0
    /// Of those, the ones declared lost (not counted in ``packetsLost``: a relayed connection probes every candidate
    /// address of its peer, and most never answer, without any packet loss on the relay's path).
    public var pathProbesLost = 0
    /// Path MTU probes sent (``PathMTUDiscovery``).
    public var pathMTUProbesSent = 0
    /// Path MTU probes lost (not counted in ``packetsLost``: the path not carrying a size is no packet loss).
    public var pathMTUProbesLost = 0
    /// Times the path stopped carrying the datagram size it had confirmed (a black hole), so the size went back to
    /// the base.
    public var pathMTUBlackHoles = 0

    /// Adds `other`'s counts to these: totals over several connections (``Endpoint/closedConnectionStatistics``).
    public mutating func add(_ other: ConnectionStatistics) {
        packetsSent += other.packetsSent
        packetsReceived += other.packetsReceived
        packetsLost += other.packetsLost
        spuriousLosses += other.spuriousLosses
        stallsDetected += other.stallsDetected
        congestionEventsUndone += other.congestionEventsUndone
        bytesSent += other.bytesSent
        bytesReceived += other.bytesReceived
        messagesDelivered += other.messagesDelivered
        datagramsDropped += other.datagramsDropped
        handshakes += other.handshakes
        keypairsExhausted += other.keypairsExhausted
        receiveWindowIncreases += other.receiveWindowIncreases
        migrations += other.migrations
        pathsValidated += other.pathsValidated
        pathValidationFailures += other.pathValidationFailures
        pathProbesSent += other.pathProbesSent
        pathProbesLost += other.pathProbesLost
        pathMTUProbesSent += other.pathMTUProbesSent
        pathMTUProbesLost += other.pathMTUProbesLost
        pathMTUBlackHoles += other.pathMTUBlackHoles
    }
}
