/// Datagram Packetization Layer Path MTU Discovery (RFC 8899) for one connection's direct path: finds the largest
/// datagram the path carries, between the base size every path carries (``ConnectionConfiguration/maxDatagramSize``,
/// 1200 bytes) and the connection's ceiling (``ConnectionConfiguration/maxProbedDatagramSize``).
///
/// A probe is a PING padded to the size being tried, sent alone. Its loss is not a congestion signal (the path may
/// simply not carry that size) and nothing in it is retransmitted. Sizes are tried largest first: the ceiling, then
/// ``ProtocolLimits/pathMTUCandidates`` below it. A size is confirmed when one probe of it is acknowledged, and given
/// up after ``ProtocolLimits/pathMTUProbeAttempts`` probes of it were lost; since every larger size has failed by
/// then, the first confirmed size ends the search. A search that ended below the ceiling starts again after
/// ``ProtocolLimits/pathMTURaiseInterval``.
///
/// Black holes: a path that carried the confirmed size may stop doing so (a route change). After
/// ``ProtocolLimits/pathMTUBlackHoleLossEvents`` loss events in a row that lost datagrams above the base size while
/// none above it was acknowledged, the size drops back to the base and a new search starts below the failed size.
/// Meanwhile probe-timeout packets are sent at the base size, so a connection whose large datagrams vanish keeps
/// getting acknowledgements that declare them lost.
///
/// Sans-IO: time comes in as `now:`.
struct PathMTUDiscovery: Sendable {
    /// The size every path carries; never probed, never given up.
    let base: Int
    /// The largest size this side may send.
    let ceiling: Int
    /// The largest size the path is known to carry (RFC 8899's PLPMTU): what packets are built to.
    private(set) var current: Int
    /// The size being probed, while a search runs.
    private(set) var probeSize: Int?
    /// The packet number of the probe in flight, if any.
    private(set) var probeInFlight: UInt64?
    /// Probes of ``probeSize`` lost so far.
    private var probesLost = 0
    /// The smallest size that failed in this search: candidates at or above it are skipped.
    private var failedSize: Int
    /// When a finished search below the ceiling starts again.
    private var raiseAt: Instant?
    /// Loss events in a row that lost datagrams above ``base`` (see the type's black-hole rule).
    private var suspiciousLossEvents = 0
    /// Whether a datagram above ``base`` was acknowledged since the last loss event.
    private var acknowledgedAboveBase = false
    /// Searches started, for statistics and tests.
    private(set) var searches = 0
    /// Times the path stopped carrying the confirmed size.
    private(set) var blackHoles = 0

    /// Discovery between `base` and `ceiling`; the first search starts when the connection first asks for a probe.
    /// A ceiling at or below the base disables probing.
    init(base: Int, ceiling: Int) {
        self.base = base
        self.ceiling = max(base, ceiling)
        current = base
        failedSize = self.ceiling + 1
        probeSize = nextCandidate()
        if probeSize != nil { searches = 1 }
    }

    /// Whether probing is possible at all (a ceiling above the base).
    var isEnabled: Bool { ceiling > base }

    /// The size of the probe to send now, or `nil` (no search running, or a probe already in flight). A finished
    /// search below the ceiling starts again here once ``ProtocolLimits/pathMTURaiseInterval`` has passed.
    mutating func probeDue(now: Instant) -> Int? {
        if probeSize == nil, let raiseAt, now >= raiseAt {
            self.raiseAt = nil
            failedSize = ceiling + 1
            probesLost = 0
            probeSize = nextCandidate()
            if probeSize != nil { searches += 1 }
        }
        guard probeInFlight == nil else { return nil }
        return probeSize
    }

    /// A probe of ``probeSize`` went out as `packetNumber`.
    mutating func onProbeSent(packetNumber: UInt64) {
        probeInFlight = packetNumber
    }

    /// Packet `packetNumber` of `bytes` bytes was acknowledged.
    mutating func onAcknowledged(packetNumber: UInt64, bytes: Int, now: Instant) {
        if bytes > base { acknowledgedAboveBase = true }
        guard packetNumber == probeInFlight, let size = probeSize else { return }
        probeInFlight = nil
        current = max(current, size)
        finishSearch(now: now)
    }

    /// Packet `packetNumber` was declared lost; returns whether it was the probe in flight.
    mutating func onLost(packetNumber: UInt64, now: Instant) -> Bool {
        guard packetNumber == probeInFlight, let size = probeSize else { return false }
        probeInFlight = nil
        probesLost += 1
        if probesLost >= ProtocolLimits.pathMTUProbeAttempts {
            failedSize = size
            probesLost = 0
            probeSize = nextCandidate()
            if probeSize == nil { finishSearch(now: now) }
        }
        return true
    }

    /// A loss event (one ACK's or one timeout's declared losses) is over: `lostAboveBase` tells whether it lost any
    /// non-probe datagram larger than the base. Applies the black-hole rule; returns whether it found a black hole.
    mutating func onLossEvent(lostAboveBase: Bool, now: Instant) -> Bool {
        defer { acknowledgedAboveBase = false }
        if acknowledgedAboveBase { suspiciousLossEvents = 0 }
        guard lostAboveBase, !acknowledgedAboveBase, current > base else { return false }
        suspiciousLossEvents += 1
        guard suspiciousLossEvents >= ProtocolLimits.pathMTUBlackHoleLossEvents else { return false }
        blackHoles += 1
        suspiciousLossEvents = 0
        failedSize = current
        current = base
        probeInFlight = nil
        probesLost = 0
        raiseAt = nil
        probeSize = nextCandidate()
        if probeSize != nil { searches += 1 } else { finishSearch(now: now) }
        return true
    }

    /// The connection moved to a new network path: what was learned says nothing about it; search again.
    mutating func restart() {
        self = PathMTUDiscovery(base: base, ceiling: ceiling)
    }

    private mutating func finishSearch(now: Instant) {
        probeSize = nil
        probesLost = 0
        raiseAt = current < ceiling ? now + ProtocolLimits.pathMTURaiseInterval : nil
    }

    /// The largest size left to try: the ceiling, then the known candidates, each above ``current`` and below
    /// ``failedSize``.
    private func nextCandidate() -> Int? {
        if ceiling > current, ceiling < failedSize { return ceiling }
        return ProtocolLimits.pathMTUCandidates.first { $0 > current && $0 < failedSize && $0 <= ceiling }
    }
}
