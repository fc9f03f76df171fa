import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import HuddleWire
import Testing

/// How ``SessionCore`` turns its connections' silence into participant events (issue 37, item 4): once per silence,
/// only for an active member, and never left standing when the connection that was silent goes away.
@Suite("Unresponsive members in the session core")
struct UnresponsiveMemberTests {
    /// The founder's core and endpoint `a`, connected (as `live`) to `b`, a member admitted under the founder's
    /// invitation.
    static func setUp() throws -> (core: SessionCore, a: Endpoint, live: ConnectionID, b: X25519PublicKey) {
        var founder = try MemberRemovalTests.Founder()
        let pair = try EndpointPair.connected()
        var a = pair.a
        let b = pair.b
        _ = EndpointPair.events(&a)
        // b's identity, as EndpointPair made it: its record joins the founder's roster under the invitation.
        var random = ChaChaRandomGenerator(seed: 2)
        let identity = Identity(using: &random)
        let record = MemberRecord(
            identity: identity.publicIdentity, name: "b", addresses: [EndpointPair.address(2)], epoch: 0)
        #expect(record.staticKey == b.staticKey)
        founder.membership.peerConnected(record.staticKey, address: record.addresses[0], admitted: true)
        try founder.membership.receive(
            MembershipMessage.joinRequest(session: founder.session, invitation: founder.invitation.id, member: record)
                .encoded(),
            from: record.staticKey, admission: founder.invitation.id)
        _ = founder.actions()
        var core = SessionCore(membership: founder.membership)
        let live = try #require(a.connectionID(for: b.staticKey))
        core.handle(.connected(live, peer: b.staticKey), endpoint: &a, now: .zero)
        #expect(core.membership.isActiveMember(b.staticKey))
        while core.pollEvent() != nil {}
        return (core, a, live, b.staticKey)
    }

    static func events(_ core: inout SessionCore) -> [String] {
        var names: [String] = []
        while let event = core.pollEvent() {
            switch event {
            case .participantUnresponsive: names.append("unresponsive")
            case .participantResponsive: names.append("responsive")
            case .participantLeft(_, let reason): names.append("left \(reason)")
            default: break
            }
        }
        return names
    }

    @Test("A silence is reported once; the next packet reports the member responsive")
    func onceThenResponsive() throws {
        var (core, a, live, b) = try Self.setUp()
        core.handle(.unresponsive(live, peer: b, lastHeard: .zero), endpoint: &a, now: .zero + .seconds(2))
        core.handle(.unresponsive(live, peer: b, lastHeard: .zero), endpoint: &a, now: .zero + .seconds(3))
        #expect(Self.events(&core) == ["unresponsive"])
        core.handle(.responsive(live, peer: b), endpoint: &a, now: .zero + .seconds(4))
        core.handle(.responsive(live, peer: b), endpoint: &a, now: .zero + .seconds(4))
        #expect(Self.events(&core) == ["responsive"])
    }

    @Test("A silent connection replaced by a newer established one: the member is responsive, whatever the order")
    func replacedConnection() throws {
        var (core, a, live, b) = try Self.setUp()
        // An older connection to b that fell silent (the live one is newer and established).
        let older = ConnectionID(live.rawValue &+ 1000)
        core.handle(.connected(older, peer: b), endpoint: &a, now: .zero)
        core.handle(.unresponsive(older, peer: b, lastHeard: .zero), endpoint: &a, now: .zero + .seconds(2))
        #expect(Self.events(&core) == ["unresponsive"])
        // It closes after the newer one reported connected: the member was heard there.
        core.handle(.closed(older, peer: b, reason: nil, undelivered: []), endpoint: &a, now: .zero + .seconds(3))
        #expect(Self.events(&core) == ["responsive"])
        // And its next silence is reported again.
        core.handle(.unresponsive(live, peer: b, lastHeard: .zero), endpoint: &a, now: .zero + .seconds(5))
        #expect(Self.events(&core) == ["unresponsive"])
    }

    @Test("A silent connection that closes with nothing to replace it: unreachable, and no responsive after")
    func closedUnreachable() throws {
        var (core, a, live, b) = try Self.setUp()
        core.handle(.unresponsive(live, peer: b, lastHeard: .zero), endpoint: &a, now: .zero + .seconds(2))
        a.close(live, code: .idleTimeout, reason: "idle", now: .zero + .seconds(15))
        core.handle(
            .closed(live, peer: b, reason: .idleTimeout, undelivered: []), endpoint: &a, now: .zero + .seconds(15))
        #expect(Self.events(&core) == ["unresponsive", "left unreachable"])
    }
}
