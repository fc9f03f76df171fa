/// Datagram Packetization Layer Path MTU Discovery (RFC 8899) for one connection's direct path: finds the largest
/// datagram the path carries, between the base size every path carries (``ConnectionConfiguration/maxDatagramSize``,
/// 1200 bytes) and the connection's ceiling (``ConnectionConfiguration/maxProbedDatagramSize``).
///
/// A probe is a PING padded to the size being tried, sent alone. Its loss is not a congestion signal (the path may
/// simply not carry that size) and nothing in it is retransmitted. The sizes are the ceiling and
/// ``ProtocolLimits/pathMTUCandidates`` below it; each probe tries the largest one not yet decided that the
/// connection's window lets it send (the caller's `largest`: a probe that filled most of a young window would starve
/// the data, and the delivery-rate samples a controller such as BBR leaves its startup by). A size is confirmed when
/// one probe of it is acknowledged, and given up after ``ProtocolLimits/pathMTUProbeAttempts`` probes of it were
/// lost. The search ends when no size between the confirmed one and the smallest given-up one is left; a search that
/// ended below the ceiling starts again after ``ProtocolLimits/pathMTURaiseInterval``. With a large enough window the
/// first probe tries the ceiling, so a path that carries it is found in one round trip.
///
/// Black holes: a path that carried the confirmed size may stop doing so (a route change). A loss event (the losses
/// one ACK or one timeout declares) is suspicious when the smallest datagram above the base size it lost is larger
/// than every datagram acknowledged since the previous loss event (quinn's rule: medium-sized datagrams getting
/// through do not hide large ones vanishing). After ``ProtocolLimits/pathMTUBlackHoleLossEvents`` suspicious events
/// in a row the size drops back to the base and the whole range is searched again (a false alarm then costs one
/// probe; a real black hole three per size that no longer fits).
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
    /// Whether a search runs.
    private(set) var isSearching: Bool
    /// The probe in flight, if any: its packet number and size.
    private(set) var probeInFlight: (packetNumber: UInt64, size: Int)?
    /// Probes lost so far in this search, per size (sizes the window alternates between keep their own counts).
    private var probesLost: [Int: Int] = [:]
    /// The smallest size that failed in this search: sizes at or above it are not tried again.
    private var failedSize: Int
    /// When a finished search below the ceiling starts again.
    private var raiseAt: Instant?
    /// Suspicious loss events in a row (see the type's black-hole rule).
    private var suspiciousLossEvents = 0
    /// The largest datagram acknowledged since the last loss event.
    private var largestAcknowledged = 0
    /// Times the path stopped carrying the confirmed size.
    private(set) var blackHoles = 0

    /// Discovery between `base` and `ceiling`, searching from the start. A ceiling at or below the base disables it.
    init(base: Int, ceiling: Int) {
        self.base = base
        self.ceiling = max(base, ceiling)
        current = base
        failedSize = self.ceiling + 1
        isSearching = self.ceiling > base
    }

    /// Whether probing is possible at all (a ceiling above the base).
    var isEnabled: Bool { ceiling > base }

    /// The size of the probe to send now, at most `largest`, or `nil`: no search running, a probe already in flight,
    /// or no undecided size within `largest` yet. A finished search below the ceiling starts again here once
    /// ``ProtocolLimits/pathMTURaiseInterval`` has passed.
    mutating func probeDue(now: Instant, largest: Int) -> Int? {
        if !isSearching, let raiseAt, now >= raiseAt {
            self.raiseAt = nil
            failedSize = ceiling + 1
            probesLost.removeAll()
            isSearching = true
        }
        guard isSearching, probeInFlight == nil else { return nil }
        return candidate(atMost: largest)
    }

    /// A probe of `size` bytes went out as `packetNumber`.
    mutating func onProbeSent(packetNumber: UInt64, size: Int) {
        probeInFlight = (packetNumber, size)
    }

    /// Packet `packetNumber` of `bytes` bytes was acknowledged.
    mutating func onAcknowledged(packetNumber: UInt64, bytes: Int, now: Instant) {
        largestAcknowledged = max(largestAcknowledged, bytes)
        guard let probe = probeInFlight, probe.packetNumber == packetNumber else { return }
        probeInFlight = nil
        current = max(current, probe.size)
        finishIfDecided(now: now)
    }

    /// Packet `packetNumber` was declared lost; returns whether it was the probe in flight.
    mutating func onLost(packetNumber: UInt64, now: Instant) -> Bool {
        guard let probe = probeInFlight, probe.packetNumber == packetNumber else { return false }
        probeInFlight = nil
        probesLost[probe.size, default: 0] += 1
        if probesLost[probe.size, default: 0] >= ProtocolLimits.pathMTUProbeAttempts {
            failedSize = min(failedSize, probe.size)
            finishIfDecided(now: now)
        }
        return true
    }

    /// A loss event (one ACK's or one timeout's declared losses) is over: `smallestLostAboveBase` is the smallest
    /// non-probe datagram larger than the base it lost, if any. Applies the black-hole rule; returns whether it found
    /// a black hole.
    mutating func onLossEvent(smallestLostAboveBase: Int?, now: Instant) -> Bool {
        defer { largestAcknowledged = 0 }
        guard let lost = smallestLostAboveBase, current > base else { return false }
        guard lost > largestAcknowledged else {
            // A datagram at least as large got through since the last loss event: the path carries the size.
            suspiciousLossEvents = 0
            return false
        }
        suspiciousLossEvents += 1
        guard suspiciousLossEvents >= ProtocolLimits.pathMTUBlackHoleLossEvents else { return false }
        blackHoles += 1
        suspiciousLossEvents = 0
        current = base
        failedSize = ceiling + 1
        probesLost.removeAll()
        probeInFlight = nil
        raiseAt = nil
        isSearching = true
        finishIfDecided(now: now)
        return true
    }

    /// The connection moved to a new network path: what was learned says nothing about it; search again.
    mutating func restart() {
        self = PathMTUDiscovery(base: base, ceiling: ceiling)
    }

    /// Ends the search when no size is left between ``current`` and ``failedSize``.
    private mutating func finishIfDecided(now: Instant) {
        guard candidate(atMost: .max) == nil else { return }
        isSearching = false
        raiseAt = current < ceiling ? now + ProtocolLimits.pathMTURaiseInterval : nil
    }

    /// The largest size left to try that is at most `largest`: the ceiling or a known candidate, above ``current``
    /// and below ``failedSize``.
    private func candidate(atMost largest: Int) -> Int? {
        let limit = min(largest, failedSize - 1)
        if ceiling > current, ceiling <= limit { return ceiling }
        return ProtocolLimits.pathMTUCandidates.first { $0 > current && $0 <= limit && $0 < ceiling }
    }
}
