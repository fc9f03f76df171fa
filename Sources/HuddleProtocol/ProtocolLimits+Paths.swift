extension ProtocolLimits {
    /// Until a peer's new address is validated, a connection sends it at most this many times the bytes it received
    /// from it (RFC 9000 §8: anti-amplification).
    public static let amplificationFactor = 3
    /// Routes a connection remembers as validated (it migrates back to them without a new challenge); the oldest is
    /// forgotten first.
    public static let maxValidatedPaths = 4
    /// PATH_CHALLENGEs a connection has outstanding at once (one per candidate address being probed); further
    /// candidates wait until one completes or fails.
    public static let maxPathChallenges = 8
    /// PATH_RESPONSEs a connection owes at once; beyond it the oldest is dropped (the challenger retries).
    public static let maxPathResponsesOwed = 8
    /// Times a PATH_CHALLENGE is sent before its path counts as failed.
    public static let pathChallengeAttempts = 6
    /// The wait before the first resend of a PATH_CHALLENGE; each further resend waits twice as long, so the six
    /// attempts span 3.1 s: long enough for a peer that learns of the probe a round trip later to punch back.
    public static let pathChallengeInitialInterval: Duration = .milliseconds(100)
    /// How long after its last attempt an unanswered PATH_CHALLENGE fails.
    public static let pathChallengeTimeout: Duration = .seconds(1)
    /// Consecutive probe timeouts on a direct route after which a connection that has a relayed route goes back to
    /// the relay.
    public static let probeTimeoutsBeforeRelayFallback = 3
    /// Addresses an endpoint offers as its own in CANDIDATES (local interface addresses and reflexive addresses
    /// learned from relays and peers): ``WireLimits/maxCandidates``.
    public static let maxCandidates = 8
    /// Reflexive addresses (as relays and peers report them) an endpoint remembers; the oldest is forgotten first.
    public static let maxReflexiveAddresses = 4
}
