extension ProtocolLimits {
    /// Datagram sizes Path MTU discovery tries, largest first, after the connection's own ceiling: the UDP payload of
    /// the common link MTUs (9000-byte jumbo frames, 1500-byte Ethernet, 1492-byte PPPoE, 1420-byte WireGuard-style
    /// tunnels, IPv6's 1280-byte minimum), each for IPv4 (28 bytes of headers) and IPv6 (48). Trying known sizes
    /// instead of bisecting finds a typical path's size in one to three steps.
    public static let pathMTUCandidates = [8972, 8952, 1472, 1464, 1452, 1444, 1392, 1372, 1252, 1232]
    /// Times one probe size is sent before it counts as not carried by the path (RFC 8899 `MAX_PROBES`).
    public static let pathMTUProbeAttempts = 3
    /// After a search ends below the ceiling, how long before the larger sizes are tried again (RFC 8899
    /// `PMTU_RAISE_TIMER`): a route may have changed to one that carries more.
    public static let pathMTURaiseInterval: Duration = .seconds(600)
    /// Suspicious loss events in a row (each lost a datagram above the base size larger than every datagram
    /// acknowledged since the event before) after which a connection decides the path stopped carrying its size (a
    /// black hole) and goes back to the base size. Random loss makes a false alarm now and then on a connection
    /// whose few large datagrams are all lost three times in a row; it costs only a new search, which finds the size
    /// again with one probe.
    public static let pathMTUBlackHoleLossEvents = 3
    /// Packets are built larger than the base size only while the congestion window holds at least this many of
    /// them: windows and pacing bursts are sized in base datagrams, so a smaller window keeps to the base size
    /// rather than wait for room a large datagram may never get.
    public static let largeDatagramWindowMultiple = 4
}
