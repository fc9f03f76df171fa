/// Bounds how many initiations from one source reach Diffie-Hellman while the endpoint is under load: a token bucket
/// per source (an IPv4 address, an IPv6 address's /64, or a relayed peer by relay and key), as WireGuard's rate
/// limiter does. Under load every initiation must already prove its address with a cookie; this bounds what one
/// address that answers cookies from many ports can make the endpoint compute (TEST-MATRIX D2).
struct InitiationRateLimiter: Sendable {
    private struct Bucket: Sendable {
        var tokens: Double
        var updated: Instant
    }

    private var buckets: [[UInt8]: Bucket] = [:]
    /// When the full table was last swept: at most once per ``sweepInterval``, so a stream of new sources cannot
    /// make every initiation scan the table.
    private var lastSweep: Instant?
    /// The time a bucket takes to refill from empty: 250 ms.
    static let sweepInterval = Duration.milliseconds(
        Int64(1000 * ProtocolLimits.initiationBurstPerSource / ProtocolLimits.initiationsPerSecondPerSource))

    /// Sources tracked now (for tests).
    var trackedSources: Int { buckets.count }

    /// Whether an initiation from `source` may go on to Diffie-Hellman at `now`; takes a token when it may. A source
    /// not seen yet starts with a full bucket. With ``ProtocolLimits/maxRateLimitedSources`` tracked, sources whose
    /// bucket has refilled are forgotten (a sweep at most every ``sweepInterval``); a new source finding the table
    /// still full is refused.
    mutating func allow(_ source: Route, now: Instant) -> Bool {
        let key = Self.key(source)
        let burst = Double(ProtocolLimits.initiationBurstPerSource)
        var bucket: Bucket
        if let known = buckets[key] {
            bucket = known
            bucket.tokens = min(burst, bucket.tokens + Self.seconds(now - bucket.updated) * Self.rate)
            bucket.updated = now
        } else {
            if buckets.count >= ProtocolLimits.maxRateLimitedSources,
                lastSweep.map({ now - $0 >= Self.sweepInterval }) ?? true
            {
                lastSweep = now
                forgetRefilled(now: now)
            }
            guard buckets.count < ProtocolLimits.maxRateLimitedSources else { return false }
            bucket = Bucket(tokens: burst, updated: now)
        }
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[key] = bucket
        return allowed
    }

    private static let rate = Double(ProtocolLimits.initiationsPerSecondPerSource)

    /// Forgets sources whose bucket is full again by `now`: a new bucket would start the same.
    private mutating func forgetRefilled(now: Instant) {
        let burst = Double(ProtocolLimits.initiationBurstPerSource)
        buckets = buckets.filter { _, bucket in bucket.tokens + Self.seconds(now - bucket.updated) * Self.rate < burst }
    }

    /// What identifies a source: the IP address (an IPv6 /64, which one host usually has whole; an IPv4 address
    /// mapped into IPv6 by a dual-stack socket is its IPv4 address; through TURN, the peer's as the server saw it), or
    /// for a relayed initiation the relay and the key it vouched for.
    static func key(_ source: Route) -> [UInt8] {
        switch source {
        case .direct(let address), .turn(_, let address):
            let bytes = address.addressBytes
            guard bytes.count == 16 else { return bytes }
            if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return Array(bytes.suffix(4))
            }
            return Array(bytes.prefix(8))
        case .relayed:
            return source.canonicalBytes
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
