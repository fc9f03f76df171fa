import HuddleProtocol

/// The fault model of one directed link. Every knob is applied independently per datagram, with the network's
/// seeded random generator, so a run is a pure function of its seed.
public struct LinkConditions: Sendable, Hashable, CustomStringConvertible {
    /// Bursty loss as a two-state Gilbert-Elliott chain.
    public struct BurstLoss: Sendable, Hashable {
        /// Probability per datagram of moving from the good to the bad state.
        public var enterBad: Double
        /// Probability per datagram of moving from the bad back to the good state.
        public var leaveBad: Double
        /// Loss probability while in the bad state (the good state uses ``LinkConditions/lossRate``).
        public var lossInBad: Double

        /// A burst model; mean burst length is 1 / `leaveBad` datagrams.
        public init(enterBad: Double, leaveBad: Double, lossInBad: Double = 1) {
            self.enterBad = enterBad
            self.leaveBad = leaveBad
            self.lossInBad = lossInBad
        }

        /// A chain whose long-run loss rate is `rate`, with bursts of `meanBurst` datagrams on average, where
        /// `correlation` is the probability that a loss is followed by another (the Jepsen `flaky` knob).
        public static func correlated(rate: Double, correlation: Double) -> BurstLoss {
            // Stationary bad-state share = enter / (enter + leave) = rate, with leave = 1 - correlation.
            let leave = max(1 - correlation, 0.01)
            let enter = rate * leave / max(1 - rate, 0.01)
            return BurstLoss(enterBad: enter, leaveBad: leave)
        }
    }

    /// One-way propagation delay.
    public var latency: Duration
    /// Extra delay drawn uniformly from `0..<jitter` per datagram; larger than the send spacing, it reorders.
    public var jitter: Duration
    /// Independent loss probability (in the good state when ``burstLoss`` is set).
    public var lossRate: Double
    /// Optional bursty loss.
    public var burstLoss: BurstLoss?
    /// Probability that a datagram is delivered twice (the copy gets its own delay).
    public var duplicateRate: Double
    /// Probability that a datagram is damaged: a bit flip, a truncation or an extension.
    public var corruptRate: Double
    /// Datagrams larger than this are dropped (a path MTU, as the largest UDP payload), if set. Links default to
    /// ``ethernetMTU``, so every scenario runs Path MTU discovery against a real limit.
    public var mtu: Int?
    /// Serialisation rate in bytes per second, if limited.
    public var bandwidth: Int?
    /// Bytes that may wait for the link when ``bandwidth`` is limited; beyond, datagrams are dropped (drop-tail).
    public var queueLimit: Int
    /// Whether the link delivers at all (partitions and blackholes turn it off).
    public var isUp: Bool
    /// Links with the same number share one bottleneck: one serialiser and one drop-tail queue (give them the same
    /// ``bandwidth`` and ``queueLimit``). The network records every datagram's wait in a shared queue
    /// (`SimulatedNetwork.bottleneckDelays`). `nil`: the link has its own.
    public var sharedQueue: Int?

    /// A link with the given faults; the defaults are a clean 15 ms link.
    public init(
        latency: Duration = .milliseconds(15), jitter: Duration = .zero, lossRate: Double = 0,
        burstLoss: BurstLoss? = nil, duplicateRate: Double = 0, corruptRate: Double = 0, mtu: Int? = ethernetMTU,
        bandwidth: Int? = nil, queueLimit: Int = 64 * 1024, isUp: Bool = true, sharedQueue: Int? = nil
    ) {
        self.latency = latency
        self.jitter = jitter
        self.lossRate = lossRate
        self.burstLoss = burstLoss
        self.duplicateRate = duplicateRate
        self.corruptRate = corruptRate
        self.mtu = mtu
        self.bandwidth = bandwidth
        self.queueLimit = queueLimit
        self.isUp = isUp
        self.sharedQueue = sharedQueue
    }

    /// The largest UDP payload of a 1500-byte Ethernet MTU over IPv4 (1472): the default ``mtu``.
    public static let ethernetMTU = 1472

    /// A clean link with `latency`.
    public static func clean(latency: Duration = .milliseconds(15)) -> LinkConditions {
        LinkConditions(latency: latency)
    }

    public var description: String {
        var parts = ["latency \(latency)"]
        if jitter > .zero { parts.append("jitter \(jitter)") }
        if lossRate > 0 { parts.append("loss \(lossRate)") }
        if let burstLoss {
            parts.append(
                "burst(enter \(burstLoss.enterBad), leave \(burstLoss.leaveBad), lossInBad \(burstLoss.lossInBad))")
        }
        if duplicateRate > 0 { parts.append("duplicate \(duplicateRate)") }
        if corruptRate > 0 { parts.append("corrupt \(corruptRate)") }
        if let mtu, mtu != Self.ethernetMTU { parts.append("mtu \(mtu)") }
        if let bandwidth { parts.append("bandwidth \(bandwidth) B/s queue \(queueLimit) B") }
        if !isUp { parts.append("down") }
        return parts.joined(separator: ", ")
    }
}
