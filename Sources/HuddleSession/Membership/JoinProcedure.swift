import HuddleCrypto
import HuddleProtocol

/// Getting into a session, from both sides: as a joiner, the members a ticket names (the *hints*), which one it asks
/// (its *sponsor*), whom it asked, and what it does when its sponsor's connection closes; as a member, the joiners it
/// welcomed on their current connection.
///
/// A sub-machine of ``SessionMembership``, which keeps the phase, knows the connections (``Reachability``) and sends
/// the requests this procedure decides on. Guarantees:
/// - Each member the ticket names is a hint once, in ticket order, and is dialled again after its connection closed
///   at most ``ProtocolLimits/maxJoinRedialsPerMember`` times before the join gives up on it.
/// - There is at most one sponsor: the member asked last. A WELCOME is accepted from any member ever asked
///   (``wasAsked(_:)``), so one that answers a repeated request late is not a stranger.
/// - A retry (``nextToAsk(connected:)``) cycles through the connected hints in ticket order, starting after the
///   sponsor, so a member that lost the request, restarted or is itself joining does not stall the join.
/// - The join fails only when no named member is left to ask: every hint failed, or the sponsor's connection closed
///   with no other hint connected and its redials used up.
struct JoinProcedure: Sendable {
    /// What a joiner does after its sponsor's connection closed.
    enum Step: Sendable, Equatable {
        /// Ask this hint, which is connected.
        case ask(X25519PublicKey)
        /// Dial the lost sponsor again at the addresses its ticket gave.
        case redial(X25519PublicKey, addresses: [NetworkAddress])
        /// Give up: no named member is left to ask.
        case fail
    }

    /// The invitation this node joins with (`nil`: it started the session, and never asks to join).
    let invitation: AdmissionID?
    /// Members the ticket names that may still be asked, in ticket order (emptied once the WELCOME came).
    private(set) var hints: [X25519PublicKey] = []
    /// Where the ticket says each hint is, for dialing it again (see ``ProtocolLimits/maxJoinRedialsPerMember``).
    private var hintAddresses: [X25519PublicKey: [NetworkAddress]] = [:]
    /// How often this joiner dialed each hint again after its connection closed.
    private(set) var redials: [X25519PublicKey: Int] = [:]
    /// The member asked last, whose WELCOME this joiner waits for.
    private(set) var sponsor: X25519PublicKey?
    /// Members this joiner sent a join request to: a WELCOME from any of them is accepted.
    private var asked: Set<X25519PublicKey> = []
    /// Joiners this member welcomed on their current connection: a repeated request gets the same record again.
    private var welcomed: Set<X25519PublicKey> = []
    /// Whether the sponsor said the request waits for a member's answer (ask to join): the joiner then stops asking
    /// again on its timer, since a repeated request would only be held as well.
    private(set) var isWaitingForApproval = false
    /// Whether a member turned this joiner away: the join is over, and nothing later changes that.
    private(set) var isRefused = false
    /// The last refusal of this joiner's handshake by a hint of another protocol revision (both Noise prologues):
    /// when no hint is left, the join failed for that reason rather than for want of an answer.
    private(set) var refusal: (ours: [UInt8], theirs: [UInt8])?

    /// A procedure joining with `invitation`, or, without one, that of a member that started the session.
    init(invitation: AdmissionID? = nil) {
        self.invitation = invitation
    }

    // MARK: - Joiner

    /// Adds a member the ticket names, reachable at `addresses`; returns `false` (and changes nothing) for one named
    /// already: the first naming's addresses count.
    mutating func addHint(_ key: X25519PublicKey, addresses: [NetworkAddress]) -> Bool {
        guard !hints.contains(key) else { return false }
        hints.append(key)
        hintAddresses[key] = addresses
        return true
    }

    /// Whether `key` is a member the ticket names that may still be asked.
    func isHint(_ key: X25519PublicKey) -> Bool { hints.contains(key) }

    /// Whether a new connection to `key` should carry a join request: the first hint to answer becomes the sponsor,
    /// and a new connection to the sponsor means it restarted (or the old connection was superseded) and may have
    /// lost the request.
    func asksOnConnection(to key: X25519PublicKey) -> Bool {
        (sponsor == nil || sponsor == key) && hints.contains(key)
    }

    /// Makes `key` the sponsor and remembers it was asked; returns the invitation to name in the request, or `nil`
    /// (and changes nothing) without one.
    mutating func ask(_ key: X25519PublicKey) -> AdmissionID? {
        guard let invitation else { return nil }
        asked.insert(key)
        sponsor = key
        return invitation
    }

    /// Whether this node sent `key` a join request, so a WELCOME from it is an answer.
    func wasAsked(_ key: X25519PublicKey) -> Bool { asked.contains(key) }

    /// The member to ask again when the WELCOME has not come: the next hint in ticket order after the sponsor among
    /// those `connected`, wrapping around (the sponsor itself when it is the only one), or the first connected hint
    /// when the sponsor is not connected; `nil` when no hint is connected.
    func nextToAsk(connected: Set<X25519PublicKey>) -> X25519PublicKey? {
        let reachable = hints.filter { connected.contains($0) }
        guard !reachable.isEmpty else { return nil }
        let next = sponsor.flatMap { reachable.firstIndex(of: $0) }.map { reachable[($0 + 1) % reachable.count] }
        return next ?? reachable[0]
    }

    /// The sponsor `key` said the request waits for a member's answer; returns whether that is news (the first time
    /// since the joiner last asked a new sponsor).
    mutating func waitForApproval(from key: X25519PublicKey) -> Bool {
        guard key == sponsor, !isWaitingForApproval else { return false }
        isWaitingForApproval = true
        return true
    }

    /// Member `key`, which this joiner asked, turned it away; returns whether that ends the join (the first refusal
    /// does; later ones change nothing).
    mutating func refuse(from key: X25519PublicKey) -> Bool {
        guard wasAsked(key), !isRefused else { return false }
        isRefused = true
        finish()
        return true
    }

    /// The connection to `key` closed before the WELCOME (`connected`: the connections still up). Only the sponsor's
    /// matters (`nil` otherwise): it stops being the sponsor, and the joiner asks another connected hint, or dials
    /// the sponsor again (a redial counted here), or gives up. A request waiting for approval is asked again at the
    /// next member, which knows it already (every member heard of it) and keeps it waiting.
    mutating func connectionClosed(_ key: X25519PublicKey, connected: Set<X25519PublicKey>) -> Step? {
        guard key == sponsor else { return nil }
        sponsor = nil
        isWaitingForApproval = false
        if let next = hints.first(where: { connected.contains($0) }) { return .ask(next) }
        // The connection worked a moment ago: dial it again rather than fail the join (a member under a handshake
        // flood may have evicted this joiner's pending admission; the next handshake proves the address with a
        // cookie and keeps its place).
        guard let addresses = hintAddresses[key], redials[key, default: 0] < ProtocolLimits.maxJoinRedialsPerMember
        else { return .fail }
        redials[key, default: 0] += 1
        return .redial(key, addresses: addresses)
    }

    /// A connection to `key` could not be established (`refusal`: it refused the handshake as one of another protocol
    /// revision, and named its own): it is no longer a hint. Returns whether that leaves nobody to ask (no hint and no
    /// sponsor), so the join failed.
    mutating func hintFailed(
        _ key: X25519PublicKey, refusal: (ours: [UInt8], theirs: [UInt8])? = nil
    ) -> Bool {
        guard hints.contains(key) else { return false }
        if let refusal { self.refusal = refusal }
        hints.removeAll { $0 == key }
        return hints.isEmpty && sponsor == nil
    }

    /// The WELCOME came: nobody is asked any more (the members asked still are, so a late WELCOME is recognised).
    mutating func finish() {
        hints = []
        sponsor = nil
    }

    // MARK: - Sponsor

    /// Whether this member welcomed joiner `key` on its current connection.
    func hasWelcomed(_ key: X25519PublicKey) -> Bool { welcomed.contains(key) }

    /// This member welcomed joiner `key`: a repeated request on the same connection gets the same record.
    mutating func welcome(_ key: X25519PublicKey) {
        welcomed.insert(key)
    }

    /// A new connection to `key`: a request on it is a new join (the peer may have restarted), not a repetition.
    mutating func connectionOpened(_ key: X25519PublicKey) {
        welcomed.remove(key)
    }
}
