import DequeModule
import HuddleCrypto
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

    /// Peers by connection, from `.connected` until `.closed`: events may be handled after the endpoint already
    /// forgot a closed connection, so the peer is never looked up there.
    var peers: [ConnectionID: X25519PublicKey] = [:]
    var events = Deque<SessionEvent>()

    /// A core for `membership`; call ``flush(_:now:)`` to apply its first actions (a joiner's connects).
    public init(membership: SessionMembership) {
        self.membership = membership
    }

    /// The next event for the application, or `nil`.
    public mutating func pollEvent() -> SessionEvent? { events.popFirst() }

    /// Feeds one endpoint event, then applies the resulting membership actions to `endpoint`.
    public mutating func handle(_ event: EndpointEvent, endpoint: inout Endpoint, now: Instant) {
        switch event {
        case .connected(let id, let peer):
            peers[id] = peer
            let address = endpoint.connection(id)?.address ?? NetworkAddress(ipv4: 0, 0, 0, 0, port: 0)
            membership.peerConnected(peer, address: address, admitted: endpoint.admission(of: peer) != nil)
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
        case .delivered(let id, let channel, let sequence):
            if let peer = peers[id] {
                events.append(.delivered(to: peer, channel: channel, sequence: sequence))
            }
        case .closed(let id, let peer, _, let undelivered):
            if peers.removeValue(forKey: id) != nil {
                membership.peerDisconnected(peer)
            } else {
                membership.connectFailed(peer)
            }
            if !undelivered.isEmpty { events.append(.undelivered(to: peer, undelivered)) }
        case .unsent(let report):
            let peer = report.peer ?? report.connection.flatMap { peers[$0] }
            events.append(.unsent(to: peer, channel: report.channel, count: report.count))
        }
        flush(&endpoint, now: now)
    }

    /// Applies every pending membership action to `endpoint` and turns the rest into events.
    public mutating func flush(_ endpoint: inout Endpoint, now: Instant) {
        while let action = membership.pollAction() {
            switch action {
            case .send(let bytes, let peer):
                guard let id = endpoint.connectionID(for: peer) else { continue }
                // A full control queue (4 MiB of membership messages) means the peer stopped reading; the
                // connection's own timeouts will close it.
                _ = try? endpoint.send(bytes, on: MembershipMessage.channel, to: id)
            case .authorize(let credentials):
                try? endpoint.addPeer(credentials)
            case .forget(let peer):
                endpoint.removePeer(peer, now: now)
            case .dial(let peer, let addresses):
                guard let address = addresses.first else { continue }
                _ = try? endpoint.connect(to: peer, at: address, now: now)
            case .openAdmission(let id, let credentials):
                try? endpoint.addAdmission(id, credentials: credentials)
            case .closeAdmission(let id):
                endpoint.removeAdmission(id)
            case .joined:
                events.append(.joined)
            case .participantJoined(let member):
                events.append(.participantJoined(member))
            case .participantLeft(let member, let reason):
                events.append(.participantLeft(member, reason))
            case .activityChanged(let activity):
                events.append(.activityChanged(activity))
            case .ended(let by):
                events.append(.ended(by: by))
            case .joinFailed(let reason):
                events.append(.joinFailed(reason))
            }
        }
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
