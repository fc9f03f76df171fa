import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// `Endpoint.nextDeadline` (read in place, what the transport and the simulator ask after every input) is the
/// earliest of its connections' own deadlines and its relay registrations: through a handshake, a loss probe, a
/// pending acknowledgement, with a relay registration due, and after the connections close.
@Suite("Endpoint deadlines")
struct EndpointDeadlineTests {
    static func credentials(for key: X25519PublicKey) -> PeerCredentials {
        PeerCredentials(staticKey: key, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2))
    }

    /// The earliest deadline of `endpoint`'s connections, each read through its own copy (``Endpoint/connection(_:)``).
    static func connectionsDeadline(_ endpoint: Endpoint) -> Instant? {
        endpoint.connectionIDs.compactMap { endpoint.connection($0)?.nextDeadline }.min()
    }

    /// Without relays, the endpoint's deadline is its connections' earliest; the read changes nothing.
    static func expectConnectionsDeadline(_ endpoint: inout Endpoint, _ stage: String) {
        let expected = connectionsDeadline(endpoint)
        #expect(endpoint.nextDeadline == expected, "\(stage)")
        #expect(endpoint.nextDeadline == expected, "\(stage), read again")
    }

    @Test("nextDeadline is the earliest of the connections' deadlines and the relay registration at every stage")
    func earliestOfConnectionsAndRelays() throws {
        var a = EndpointPair.endpoint(seed: 1)
        var b = EndpointPair.endpoint(seed: 2)
        #expect(a.nextDeadline == nil, "idle, no peers")
        try a.addPeer(Self.credentials(for: b.staticKey))
        try b.addPeer(Self.credentials(for: a.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        Self.expectConnectionsDeadline(&a, "initiation queued")
        _ = EndpointPair.drain(&a, now: .zero)
        Self.expectConnectionsDeadline(&a, "initiation sent, retry pending")
        #expect(a.nextDeadline != nil)
        _ = EndpointPair.exchange(&a, &b, now: .zero)
        Self.expectConnectionsDeadline(&a, "established")
        Self.expectConnectionsDeadline(&b, "established (responder)")

        var now = Instant.zero + .milliseconds(5)
        let id = try #require(a.connectionIDs.first)
        _ = try a.send([1, 2, 3], on: ChannelID(16), to: id)
        _ = EndpointPair.drain(&a, now: now)
        Self.expectConnectionsDeadline(&a, "message in flight, loss probe armed")

        // A relay added now wants its registration sent at once, before any connection timer.
        a.addRelay(EndpointPair.address(9), now: now)
        #expect(a.nextDeadline == now, "relay registration due")
        now = now + .milliseconds(400)
        a.handleTimeout(now: now)
        let deadlineAfterProbe = a.nextDeadline
        let afterProbe = try #require(deadlineAfterProbe)
        #expect(afterProbe <= Self.connectionsDeadline(a) ?? afterProbe, "after a probe timeout, relay retry pending")
        _ = EndpointPair.exchange(&a, &b, now: now)
        Self.expectConnectionsDeadline(&b, "acknowledgement pending at the receiver")

        // Far past the idle timeout: the connections close (draining until their own deadline); a's relay
        // registration, retried, may come first.
        now = now + .seconds(600)
        a.handleTimeout(now: now)
        b.handleTimeout(now: now)
        let deadlineAfterIdle = a.nextDeadline
        let afterIdle = try #require(deadlineAfterIdle)
        #expect(afterIdle <= Self.connectionsDeadline(a) ?? afterIdle, "idle timeout, relay retry pending")
        Self.expectConnectionsDeadline(&b, "idle timeout (responder)")
    }
}
