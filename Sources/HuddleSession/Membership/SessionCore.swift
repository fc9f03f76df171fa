import DequeModule
import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Ties a ``SessionMembership`` to the node's ``Endpoint``: applies membership actions to the endpoint, feeds it
/// the endpoint's connection events and membership messages, and passes on only what members send. Sans-IO like
/// both: the owner (the simulator's node, or the transport's event loop) holds the endpoint and calls in with it.
public struct SessionCore: Sendable {
    /// The membership state.
    public private(set) var membership: SessionMembership
    /// Application messages dropped because their sender is not an active member (a joiner before its WELCOME, a
    /// member that already left, or a connection this core never saw complete its handshake).
    public private(set) var nonMemberMessagesDropped = 0
    /// Membership messages refused (their connection was closed with a protocol violation).
    public private(set) var membershipViolations = 0
    /// Whether this node relays for the session's other members and registers with members as relays (PROTOCOL.md
    /// section 10.3). Off, it does neither: members that cannot meet then need a dedicated relay or TURN server.
    public let relaysForMembers: Bool

    /// Whether the roster, the phase or a connection changed since the member relays were last brought in line.
    var memberRelaysStale = true
    /// When an unconfirmed member relay's wait ends or a passed-over member may be asked again.
    var memberRelayCheckAt: Instant?
    /// When registering with each member relay began.
    var memberRelaySince: [X25519PublicKey: Instant] = [:]
    /// Members that did not confirm a registration, passed over until the instant given.
    var memberRelaysDeclined: [X25519PublicKey: Instant] = [:]
    /// The phase the member relays were last brought in line under.
    var memberRelaysPhase: SessionMembership.Phase?

    /// Peers by connection, from `.connected` until `.closed`: events may be handled after the endpoint already
    /// forgot a closed connection, so the peer is never looked up there.
    var peers: [ConnectionID: X25519PublicKey] = [:]
    var events = Deque<SessionEvent>()
    /// Messages from authenticated peers that are not members this node knows yet, held until they are (bounded by
    /// ``ProtocolLimits/maxEarlyMessagesPerPeer`` and ``ProtocolLimits/maxEarlyMessageBytesPerPeer``; kept across
    /// reconnections, dropped when the membership forgets the peer).
    var early: [X25519PublicKey: EarlyMessages] = [:]

    /// Messages held for one peer, oldest first.
    struct EarlyMessages: Sendable {
        var messages: Deque<(channel: ChannelID, bytes: [UInt8])> = []
        var bytes = 0
    }

    /// Active members reported unresponsive (``SessionEvent/participantUnresponsive(_:lastHeard:)``), with the
    /// connection whose silence it was; at most one entry per member connection.
    var unresponsive: [X25519PublicKey: ConnectionID] = [:]

    /// When to dial each unreachable member again, and the wait after that attempt.
    var redials: [X25519PublicKey: (at: Instant, backoff: Duration)] = [:]

    /// Application messages held because their sender was not a member yet (see ``early``), over all peers.
    public var earlyMessagesHeld: Int { early.values.reduce(0) { $0 + $1.messages.count } }

    /// A core for `membership`, relaying for its members unless `relaysForMembers` is false; call
    /// ``flush(_:now:)`` to apply its first actions (a joiner's connects).
    public init(membership: SessionMembership, relaysForMembers: Bool = true) {
        self.membership = membership
        self.relaysForMembers = relaysForMembers
    }

    /// The next event for the application, or `nil`.
    public mutating func pollEvent() -> SessionEvent? { events.popFirst() }

    /// Feeds one endpoint event, then applies the resulting membership actions to `endpoint`.
    public mutating func handle(_ event: EndpointEvent, endpoint: inout Endpoint, now: Instant) {
        switch event {
        case .connected(let id, let peer):
            peers[id] = peer
            memberRelaysStale = true
            // A new connection to a peer reported unresponsive (it restarted, or redialled) is a peer heard from.
            heard(peer, on: id)
            // The address the peer was seen at goes first in its member record; a relay's address would mislead.
            var address: NetworkAddress?
            if case .direct(let direct) = endpoint.connection(id)?.route { address = direct }
            // Under the session admission the peer is a member (one that dialled with its credentials), not a joiner.
            let admission = endpoint.admission(of: peer)
            membership.peerConnected(
                peer, address: address, admitted: admission != nil && admission != membership.sessionAdmission)
        case .message(let id, let channel, let bytes):
            guard let peer = peers[id] else {
                nonMemberMessagesDropped += 1
                break
            }
            if channel == MembershipMessage.channel {
                do {
                    try membership.receive(bytes, from: peer, admission: endpoint.admission(of: peer))
                } catch {
                    membershipViolations += 1
                    endpoint.close(id, code: .protocolViolation, reason: error.description, now: now)
                }
            } else if membership.isActiveMember(peer), let member = membership.member(peer) {
                events.append(.message(from: member, channel: channel, bytes: bytes))
            } else if membership.phase == .joining || membership.phase == .member {
                // Their transport already acknowledged these messages, so they must not be dropped: hold them until
                // the sender is a member we know. Races make them arrive early: a joiner welcomed by another member
                // reaches us (under its invitation) and sends before the sponsor's announcement of it does; a member
                // that left or crashed and rejoined reaches us before its new announcement; members that learned of
                // us send before our own WELCOME has arrived. Only authenticated peers (member or invitation
                // credentials) get here.
                holdEarly(bytes, on: channel, from: peer, connection: id, endpoint: &endpoint, now: now)
            } else {
                nonMemberMessagesDropped += 1
            }
        case .datagram(let id, let channel, let bytes):
            guard let peer = peers[id] else {
                nonMemberMessagesDropped += 1
                break
            }
            if membership.isActiveMember(peer), let member = membership.member(peer) {
                events.append(.datagram(from: member, channel: channel, bytes: bytes))
            } else {
                nonMemberMessagesDropped += 1
            }
        case .routeChanged(let id, let peer, let route):
            memberRelaysStale = true
            // Only an active member's path is news: a joiner's route settles before it is announced.
            if peers[id] == peer, membership.isActiveMember(peer), let member = membership.member(peer) {
                let rtt = endpoint.connection(id)?.rtt.smoothed ?? .zero
                let relaying = endpoint.memberRelay(on: route).flatMap { membership.member($0) }
                events.append(.pathChanged(member, route: route, smoothedRTT: rtt, relayingMember: relaying))
            }
        case .unresponsive(let id, let peer, let lastHeard):
            // Only an active member's silence is news; a joiner's shows in its join's own timeouts.
            if peers[id] == peer, membership.isActiveMember(peer), let member = membership.member(peer),
                unresponsive.updateValue(id, forKey: peer) == nil
            {
                events.append(.participantUnresponsive(member, lastHeard: lastHeard))
            }
        case .responsive(let id, let peer):
            heard(peer, on: id)
        case .delivered(let id, let channel, let sequence, let tag):
            if let peer = peers[id] {
                events.append(.delivered(to: peer, channel: channel, sequence: sequence, tag: tag))
            }
        case .closed(let id, let peer, let error, let undelivered):
            memberRelaysStale = true
            // Judged before the membership learns of the closure: a peer that announced its departure is no longer
            // in the roster by now, one that times out still is.
            let reason = failureReason(for: peer, error: error, closing: id, endpoint: endpoint)
            // Replaced by a newer, established connection to the same peer (a restarted peer's new handshake, or
            // one that superseded this one): the peer is still connected through it, whichever order the two
            // connections' events come in. (A newer one still being set up reports connected when it is.)
            let replaced =
                endpoint.liveConnectionID(for: peer).map { live in
                    live != id && endpoint.connection(live)?.state == .established
                } ?? false
            // Its silence ends with the connection. Replaced by a newer established one, the peer was heard there
            // (whichever order the two connections' events come in); otherwise a departure or the unreachable
            // verdict follows.
            if unresponsive[peer] == id {
                if replaced { heard(peer, on: id) } else { unresponsive[peer] = nil }
            }
            if peers.removeValue(forKey: id) != nil {
                // A connection replaced by a newer one to the same peer (a restarted peer's new handshake) does not
                // make the peer unreachable: the new connection reports it connected.
                if !replaced { membership.peerDisconnected(peer) }
            } else if endpoint.liveConnectionID(for: peer).map({ $0 == id }) ?? true {
                // Never connected, and no other connection to the peer is being set up: it could not be reached.
                // (One superseded by a newer attempt leaves the verdict to that one.)
                var refusal: (ours: [UInt8], theirs: [UInt8])?
                if case .incompatibleProtocol(let ours, let theirs) = error { refusal = (ours, theirs) }
                membership.connectFailed(peer, refusal: refusal)
            }
            if !undelivered.isEmpty {
                events.append(.undelivered(to: peer, connection: id, undelivered, reason: reason))
            }
        // Held messages (``early``) stay held: the peer's transport counts them as delivered, and its
        // announcement may still come.
        case .turnChanged, .portMappingChanged:
            // Not the session's: the node reports TURN and port-mapping state to the application itself.
            return
        case .unsent(let report):
            let peer = report.peer ?? report.connection.flatMap { peers[$0] }
            let reason = peer.map { failureReason(for: $0, error: nil, closing: nil, endpoint: endpoint) } ?? .left
            events.append(
                .unsent(to: peer, channel: report.channel, count: report.count, tags: report.tags, reason: reason))
        }
        flush(&endpoint, now: now)
        if !early.isEmpty { releaseEarly() }
    }

    /// `peer` was heard on connection `id`: if it was reported unresponsive (on any connection), it is responsive again.
    private mutating func heard(_ peer: X25519PublicKey, on id: ConnectionID) {
        guard unresponsive.removeValue(forKey: peer) != nil else { return }
        if membership.isActiveMember(peer), let member = membership.member(peer) {
            events.append(.participantResponsive(member))
        }
    }

    /// Holds a message from `peer` until it is a member; closes its connection when the hold is full.
    ///
    /// A message that finds the hold full is held all the same: the peer's transport already counts it as delivered
    /// (it was acknowledged before it got here), so dropping it would lose it without a report to its sender. Closing
    /// the connection stops the peer's further messages, which stay unacknowledged and are reported to it. The bound is
    /// thus exceeded by at most what a connection delivered before its CLOSE went out. A peer that keeps reconnecting
    /// and sending meets a hard ceiling at twice the bound: beyond it, messages are dropped and counted.
    private mutating func holdEarly(
        _ bytes: [UInt8], on channel: ChannelID, from peer: X25519PublicKey, connection id: ConnectionID,
        endpoint: inout Endpoint, now: Instant
    ) {
        var held = early[peer] ?? EarlyMessages()
        let count = held.messages.count
        let total = held.bytes + bytes.count
        if count < 2 * ProtocolLimits.maxEarlyMessagesPerPeer, total <= 2 * ProtocolLimits.maxEarlyMessageBytesPerPeer {
            held.messages.append((channel, bytes))
            held.bytes = total
            early[peer] = held
        } else {
            nonMemberMessagesDropped += 1
        }
        if count >= ProtocolLimits.maxEarlyMessagesPerPeer || total > ProtocolLimits.maxEarlyMessageBytesPerPeer {
            endpoint.close(id, code: .protocolViolation, reason: "too many messages before membership", now: now)
        }
    }

    /// Passes on, in order, the held messages of every peer that became a member.
    private mutating func releaseEarly() {
        for (peer, held) in early {
            guard membership.isActiveMember(peer), let member = membership.member(peer) else { continue }
            for (channel, bytes) in held.messages {
                events.append(.message(from: member, channel: channel, bytes: bytes))
            }
            early[peer] = nil
        }
    }

    /// Why messages for `peer` failed: the local node's phase first, then the roster, then how the connection
    /// `closing` (if any) ended.
    func failureReason(
        for peer: X25519PublicKey, error: ProtocolError?, closing: ConnectionID?, endpoint: Endpoint
    ) -> DeliveryFailureReason {
        switch membership.phase {
        case .left, .ended: return .sessionEnded
        case .removed: return .removed
        case .joining, .member: break
        }
        if membership.boundary.isRemoved(static: peer) { return .removed }
        guard membership.member(peer) != nil else { return .left }
        if error == nil, let closing, let live = endpoint.liveConnectionID(for: peer), live != closing {
            return .restarted
        }
        return .unreachable
    }

    /// When a joiner asks for its WELCOME again, and the wait after that (see ``SessionMembership/retryJoinRequest()``).
    var joinRetry: (at: Instant, backoff: Duration)?

    /// When each waiting ask-to-join request expires, by joiner signing key (see
    /// ``SessionMembership/expireJoinRequest(_:)``; at most ``ProtocolLimits/maxPendingJoinRequests``).
    var approvalDeadlines: [Ed25519PublicKey: Instant] = [:]

    /// When this node draws the next admission key after a departure unless a key newer than `epoch` came first
    /// (see ``MembershipAction/rotateAdmissionAfterDeparture(place:epoch:)``).
    var departureRotation: (at: Instant, epoch: UInt64)?

    /// The earliest instant at which ``handleTimeout(endpoint:now:)`` has work (dialling an unreachable member again,
    /// asking again for a WELCOME, or forwarding a received activity value). A schedule not set up yet (see
    /// ``needsScheduling``) is not included.
    public var nextDeadline: Instant? {
        var deadline = redials.values.lazy.map(\.at).min()
        if let retry = joinRetry?.at { deadline = min(deadline ?? retry, retry) }
        for expiry in approvalDeadlines.values { deadline = min(deadline ?? expiry, expiry) }
        if let rotation = departureRotation?.at { deadline = min(deadline ?? rotation, rotation) }
        if membership.activityForwardPending, let forward = activityForwardAllowedAt {
            deadline = min(deadline ?? forward, forward)
        }
        if let check = memberRelayCheckAt { deadline = min(deadline ?? check, check) }
        return deadline
    }

    /// How many times each unreachable member was dialled again (its credentials alternate, see
    /// ``SessionMembership/redialCredentials(for:attempt:)``).
    var redialAttempts: [X25519PublicKey: Int] = [:]

    /// When the membership may forward a received activity value again (``ProtocolLimits/activityForwardInterval``
    /// after the last forward; `nil`: at once).
    var activityForwardAllowedAt: Instant?

    /// Whether ``handleTimeout(endpoint:now:)`` has a schedule to set up that ``nextDeadline`` cannot show yet: a
    /// joiner without its retry, or a member that became unreachable without its redial. A driver runs the timeout
    /// within a second of this becoming true (the engine does; the simulator's nodes run it with their other timers).
    public var needsScheduling: Bool {
        (membership.phase == .joining && joinRetry == nil)
            || membership.unreachableMembers.contains { redials[$0.staticKey] == nil }
    }

    /// Asks a joiner's members for the WELCOME again while it has not come (every 2 s, doubling to 8 s:
    /// ``ProtocolLimits/joinRequestInterval``). Dials unreachable members again: 1 s after they became unreachable, then with doubling waits up to 30 s
    /// (``ProtocolLimits/initialRedialInterval``, ``ProtocolLimits/maxRedialInterval``), while no connection to them
    /// exists. Both sides of a healed partition do this; §7.6's simultaneous-open rule makes one connection of it.
    public mutating func handleTimeout(endpoint: inout Endpoint, now: Instant) {
        if membership.phase == .joining {
            if let retry = joinRetry {
                if retry.at <= now {
                    membership.retryJoinRequest()
                    let backoff = min(retry.backoff * 2, ProtocolLimits.maxJoinRequestInterval)
                    joinRetry = (now + backoff, backoff)
                }
            } else {
                joinRetry = (now + ProtocolLimits.joinRequestInterval, ProtocolLimits.joinRequestInterval)
            }
        } else {
            joinRetry = nil
        }
        if let rotation = departureRotation, rotation.at <= now {
            departureRotation = nil
            if membership.admissionEpoch <= rotation.epoch { drawAdmissionKey(&endpoint) }
        }
        for (joiner, expiry) in approvalDeadlines where expiry <= now {
            approvalDeadlines[joiner] = nil
            membership.expireJoinRequest(joiner)
        }
        let unreachable = membership.unreachableMembers
        let keys = Set(unreachable.map(\.staticKey))
        for key in redials.keys where !keys.contains(key) {
            redials[key] = nil
            redialAttempts[key] = nil
        }
        for record in unreachable {
            let key = record.staticKey
            guard let schedule = redials[key] else {
                redials[key] = (now + ProtocolLimits.initialRedialInterval, ProtocolLimits.initialRedialInterval)
                continue
            }
            guard schedule.at <= now else { continue }
            let backoff = min(schedule.backoff * 2, ProtocolLimits.maxRedialInterval)
            redials[key] = (now + backoff, backoff)
            // A connection that only answered the member's initiation (and was never confirmed) starts its own.
            if endpoint.initiateIfOnlyAnswering(key, now: now) { continue }
            // The credentials change from attempt to attempt (``SessionMembership/redialCredentials(for:attempt:)``):
            // a member that never heard of this node accepts other ones than a member that knows it. New credentials
            // also restart a handshake still in progress under the others.
            redialAttempts[key, default: 0] += 1
            if let credentials = membership.redialCredentials(for: key, attempt: redialAttempts[key, default: 0]) {
                try? endpoint.addPeer(credentials)
            }
            guard endpoint.liveConnectionID(for: key) == nil, let address = record.addresses.first else { continue }
            _ = try? endpoint.connect(to: key, at: address, alternates: Array(record.addresses.dropFirst()), now: now)
        }
        flush(&endpoint, now: now)
    }

    /// Applies every pending membership action to `endpoint` and turns the rest into events. A received activity
    /// value waiting to be forwarded goes out first if the pace allows it (otherwise ``nextDeadline`` includes when).
    public mutating func flush(_ endpoint: inout Endpoint, now: Instant) {
        if membership.activityForwardPending, activityForwardAllowedAt.map({ $0 <= now }) ?? true {
            membership.forwardActivity()
            activityForwardAllowedAt = now + ProtocolLimits.activityForwardInterval
        }
        while let action = membership.pollAction() {
            switch action {
            case .send(let bytes, let peer):
                guard let id = endpoint.connectionID(for: peer) else { continue }
                // A full control queue (32 MiB of membership messages) means the peer stopped reading; the
                // connection's own timeouts will close it.
                _ = try? endpoint.send(bytes, on: MembershipMessage.channel, to: id)
            case .authorize(let credentials):
                try? endpoint.addPeer(credentials)
            case .forget(let peer):
                memberRelaysStale = true
                endpoint.removePeer(peer, now: now)
                if let held = early.removeValue(forKey: peer) { nonMemberMessagesDropped += held.messages.count }
            case .dial(let peer, let addresses):
                // Every address the record names is tried, the first at once and the others from the first retry.
                guard let address = addresses.first,
                    (try? endpoint.connect(
                        to: peer, at: address, alternates: Array(addresses.dropFirst()), now: now)) != nil
                else {
                    // Nowhere to dial (or not authorised): the member cannot be reached, and messages to it must
                    // not wait for a connection that will never come.
                    membership.connectFailed(peer)
                    continue
                }
            case .openAdmission(let id, let credentials):
                try? endpoint.addAdmission(id, credentials: credentials)
            case .closeAdmission(let id):
                endpoint.removeAdmission(id)
            case .joined:
                events.append(.joined)
            case .participantJoined(let member):
                memberRelaysStale = true
                events.append(.participantJoined(member))
            case .participantLeft(let member, let reason):
                memberRelaysStale = true
                events.append(.participantLeft(member, reason))
            case .activityChanged(let activity):
                events.append(.activityChanged(activity))
            case .ended(let by):
                events.append(.ended(by: by))
            case .joinFailed(let reason):
                events.append(.joinFailed(reason))
            case .removed(let by):
                events.append(.removed(by: by))
            case .rotateAdmission:
                drawAdmissionKey(&endpoint)
            case .rotateAdmissionAfterDeparture(let place, let epoch):
                guard place > 0 else {
                    drawAdmissionKey(&endpoint)
                    continue
                }
                // Two departures close together: one key drawn after the later one covers both.
                let at = now + ProtocolLimits.departureRotationStagger * place
                departureRotation = (
                    min(departureRotation?.at ?? at, at), max(departureRotation?.epoch ?? epoch, epoch)
                )
            case .waitingForApproval:
                events.append(.waitingForApproval)
            case .joinRequested(let record):
                approvalDeadlines[record.identity.signingKey] = now + ProtocolLimits.joinApprovalTimeout
                events.append(.joinRequested(record))
            case .joinRequestSettled(let record, let outcome):
                approvalDeadlines[record.identity.signingKey] = nil
                events.append(.joinRequestSettled(record, outcome))
            }
        }
        if memberRelaysPhase != membership.phase {
            memberRelaysPhase = membership.phase
            memberRelaysStale = true
        }
        updateMemberRelays(&endpoint, now: now)
    }

    /// Starts the next admission epoch with 32 bytes drawn from the endpoint's generator: the core holds none, and
    /// the simulator's stays seeded.
    private mutating func drawAdmissionKey(_ endpoint: inout Endpoint) {
        membership.rotateAdmission(secret: SecureBytes(endpoint.randomBytes(count: 32)))
    }

    /// Runs `body` on the membership (a local operation such as ``SessionMembership/setActivity(_:)``), then
    /// applies its actions to `endpoint`.
    public mutating func update<Result>(
        _ endpoint: inout Endpoint, now: Instant, _ body: (inout SessionMembership) throws -> Result
    ) rethrows -> Result {
        let result = try body(&membership)
        flush(&endpoint, now: now)
        return result
    }
}
