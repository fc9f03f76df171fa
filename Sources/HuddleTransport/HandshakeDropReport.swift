import HuddleProtocol

/// Turns the endpoint's handshake drop counters into one log line per interval: why handshake messages were dropped
/// since the last line, counted by reason.
///
/// Why: a dropped initiation gets no reply by design (a stranger must learn nothing), so a peer with another prologue,
/// a stale ticket or a clock that went backwards sees only silence. The counters say what happened; this says it in
/// the log, at most once per ``interval`` however fast drops arrive (a flood costs one line a second).
struct HandshakeDropReport {
    /// The shortest time between two lines.
    static let interval = Duration.seconds(1)

    /// Each reason with the counter it reads and what it means to someone debugging a failed join.
    static let reasons: [(key: String, counter: @Sendable (EndpointStatistics) -> Int)] = [
        ("wrong_mac1", { $0.mac1Failures }),
        ("handshake_failed", { $0.handshakeFailures }),
        ("unknown_peer", { $0.unknownPeerDropped }),
        ("stale_timestamp", { $0.staleTimestampDropped }),
        ("flood", { $0.floodDropped }),
        ("rate_limited", { $0.initiationsRateLimited }),
        ("simultaneous_initiation", { $0.simultaneousInitiationsDropped }),
        ("stale_resumption", { $0.staleResumptionsDropped }),
        ("response_dropped", { $0.responsesDropped }),
        ("admission_refused", { $0.admissionsRefused }),
    ]

    /// What each reason key means, for the log line's message.
    static let meaning =
        "wrong_mac1: not keyed to this node (another protocol version, an invitation this node does not hold, "
        + "garbage); handshake_failed: the Noise handshake did not verify (a different prologue or keys); "
        + "stale_timestamp: a replayed or older initiation; flood: over the per-peer handshake rate; "
        + "rate_limited: under load, over the per-address handshake rate"

    private var last: [Int]
    private var lastReportAt: Instant?

    /// A report that counts from `statistics` on.
    init(from statistics: EndpointStatistics) {
        last = Self.reasons.map { $0.counter(statistics) }
    }

    /// The drops since the last line, by reason (only reasons that grew), when at least ``interval`` has passed since
    /// it; `nil` otherwise (the drops are then counted into the next line).
    mutating func check(_ statistics: EndpointStatistics, now: Instant) -> [(reason: String, count: Int)]? {
        if let lastReportAt, now - lastReportAt < Self.interval { return nil }
        var grown: [(reason: String, count: Int)] = []
        for (index, reason) in Self.reasons.enumerated() {
            let value = reason.counter(statistics)
            if value > last[index] { grown.append((reason.key, value - last[index])) }
            last[index] = value
        }
        guard !grown.isEmpty else { return nil }
        lastReportAt = now
        return grown
    }
}
