import DequeModule
import HuddleCrypto

/// A connection's routes to its peer: the one in use, the ones proved to work, and the path challenges in progress
/// (RFC 9000 §8.2 path validation and §9 migration, adapted to Huddle's routes).
///
/// A route is validated when a PATH_RESPONSE echoes a challenge sent on it, or when a handshake completed on it.
/// Relayed routes count as validated: the relay only forwards from the registration the peer proved its key for.
/// Until the route in use is validated, the connection sends at most ``ProtocolLimits/amplificationFactor`` times
/// the bytes it received on it.
struct PathSet {
    /// An outstanding PATH_CHALLENGE.
    struct Challenge {
        /// The route the challenge is sent on, and that its response validates.
        var route: Route
        /// The 8 random bytes the response must echo.
        var data: UInt64
        /// Times sent so far.
        var attempts = 0
        /// When it is (re)sent next, or fails once ``ProtocolLimits/pathChallengeAttempts`` were sent.
        var dueAt: Instant
    }

    /// The route packets go to.
    private(set) var current: Route
    /// Whether ``current`` is validated.
    private(set) var currentValidated = true
    /// The last validated route before ``current``: packets go back to it if ``current`` fails validation.
    private(set) var fallback: Route?
    /// Validated direct routes, oldest first, at most ``ProtocolLimits/maxValidatedPaths``.
    private(set) var validated: [Route] = []
    /// The relayed route the connection last used, kept to fall back on when a direct route goes quiet.
    private(set) var knownRelay: Route?
    /// When an authenticated packet last arrived on ``current``.
    private(set) var lastReceivedOnCurrentAt: Instant?
    /// Bytes received and sent on ``current`` while it is not validated.
    private(set) var unvalidatedReceived = 0
    private(set) var unvalidatedSent = 0
    /// Outstanding challenges, at most ``ProtocolLimits/maxPathChallenges``.
    var challenges: [Challenge] = []
    /// PATH_RESPONSEs owed: the route each challenge came from and its data.
    var responsesOwed = Deque<(route: Route, data: UInt64)>()
    /// Challenge data comes from here: unpredictable to anyone without the endpoint's seed.
    private var random: ChaChaRandomGenerator

    init(route: Route, random: ChaChaRandomGenerator) {
        current = route
        self.random = random
        // Not validated yet: nothing but handshake messages goes out before a handshake completes on some route.
        if route.isRelayed { knownRelay = route }
    }

    /// Whether `route` is known to reach the peer.
    func isValidated(_ route: Route) -> Bool { route.isRelayed || validated.contains(route) }

    /// Bytes that may still be sent on ``current`` before the peer proves it receives there, or `nil` without limit.
    var amplificationAllowance: Int? {
        guard !currentValidated else { return nil }
        return max(0, unvalidatedReceived * ProtocolLimits.amplificationFactor - unvalidatedSent)
    }

    /// Whether not even one datagram of `size` bytes may go out on ``current`` before the peer proves it receives
    /// there.
    func amplificationBlocks(datagramSize size: Int) -> Bool {
        guard let allowance = amplificationAllowance else { return false }
        return allowance < size
    }

    /// Records that a handshake completed with the peer at `route`: only the holder of the peer's key at that
    /// address could have answered, so it is validated.
    mutating func adoptHandshakeRoute(_ route: Route) {
        if route != current, isValidated(current) { fallback = current }
        current = route
        currentValidated = true
        remember(route)
    }

    /// Counts a datagram of `bytes` received on `route` at `now` (for the amplification limit, and to tell a live
    /// route from a quiet one).
    mutating func received(_ bytes: Int, on route: Route, now: Instant) {
        guard route == current else { return }
        lastReceivedOnCurrentAt = now
        if !currentValidated { unvalidatedReceived += bytes }
    }

    /// Counts a datagram of `bytes` sent on ``current``.
    mutating func sent(_ bytes: Int) {
        if !currentValidated { unvalidatedSent += bytes }
    }

    /// Moves to `route`, where the peer's latest packet came from. An unvalidated route is challenged and limited by
    /// the amplification factor until the peer answers. Returns whether the peer's IP address changed (not just its
    /// port, as a NAT rebinding does): the congestion state then starts over.
    mutating func migrate(to route: Route, receivedBytes: Int, now: Instant) -> Bool {
        let addressChanged = route.isAnotherPath(than: current)
        if currentValidated { fallback = current }
        current = route
        if route.isRelayed { knownRelay = route }
        if isValidated(route) {
            currentValidated = true
        } else {
            currentValidated = false
            unvalidatedReceived = receivedBytes
            unvalidatedSent = 0
            challenge(route, now: now)
        }
        return addressChanged
    }

    /// Starts validating `route` unless it is validated (and `force` is not set) or already being challenged (or too
    /// many are). `force` probes a route validated before: hole punching again after a NAT mapping changed.
    mutating func challenge(_ route: Route, force: Bool = false, now: Instant) {
        guard force || !isValidated(route) || (route == current && !currentValidated),
            !challenges.contains(where: { $0.route == route }), challenges.count < ProtocolLimits.maxPathChallenges
        else { return }
        challenges.append(Challenge(route: route, data: UInt64.random(in: 0...UInt64.max, using: &random), dueAt: now))
    }

    /// Challenges `route` at once: an outstanding challenge on it is due now, otherwise a new one starts (ICE's
    /// triggered check: the peer's probe just came from there, so its NAT is open toward this side right now).
    mutating func challengeNow(_ route: Route, now: Instant) {
        if let index = challenges.firstIndex(where: { $0.route == route }) {
            if challenges[index].attempts < ProtocolLimits.pathChallengeAttempts { challenges[index].dueAt = now }
        } else {
            challenge(route, force: true, now: now)
        }
    }

    /// Handles a PATH_RESPONSE: the challenged route is validated. Returns it (or `nil` for an unknown response).
    mutating func validate(response data: UInt64) -> Route? {
        guard let index = challenges.firstIndex(where: { $0.data == data }) else { return nil }
        let route = challenges.remove(at: index).route
        remember(route)
        if route == current { currentValidated = true }
        return route
    }

    /// Owes a PATH_RESPONSE on `route`.
    mutating func owe(response data: UInt64, on route: Route) {
        if responsesOwed.count >= ProtocolLimits.maxPathResponsesOwed { responsesOwed.removeFirst() }
        responsesOwed.append((route, data))
    }

    /// Moves to `route` (validated) without a challenge: a direct path that answered while the connection was
    /// relayed, or the relay when the direct path went quiet. Returns whether the peer's IP address changed.
    mutating func switchTo(validated route: Route) -> Bool {
        let changed = route != current
        if changed, currentValidated { fallback = current }
        current = route
        currentValidated = true
        remember(route)
        return changed
    }

    /// The next challenge to send at `now`, counted as sent; challenges that ran out of attempts are dropped and,
    /// for ``current``, the connection falls back to the last validated route (returned as `reverted`).
    mutating func dueChallenge(now: Instant) -> (challenge: Challenge?, reverted: Bool) {
        var reverted = false
        var index = 0
        while index < challenges.count {
            guard challenges[index].dueAt <= now else {
                index += 1
                continue
            }
            if challenges[index].attempts >= ProtocolLimits.pathChallengeAttempts {
                let failed = challenges.remove(at: index)
                if failed.route == current, !currentValidated, let fallback {
                    current = fallback
                    currentValidated = true
                    self.fallback = nil
                    reverted = true
                }
                continue
            }
            challenges[index].attempts += 1
            let attempts = challenges[index].attempts
            challenges[index].dueAt =
                attempts >= ProtocolLimits.pathChallengeAttempts
                ? now + ProtocolLimits.pathChallengeTimeout
                : now + ProtocolLimits.pathChallengeInitialInterval * (1 << (attempts - 1))
            return (challenges[index], reverted)
        }
        return (nil, reverted)
    }

    /// The earliest challenge deadline.
    var nextChallengeDeadline: Instant? { challenges.lazy.map(\.dueAt).min() }

    private mutating func remember(_ route: Route) {
        guard !route.isRelayed else {
            knownRelay = route
            return
        }
        validated.removeAll { $0 == route }
        validated.append(route)
        if validated.count > ProtocolLimits.maxValidatedPaths { validated.removeFirst() }
    }
}
