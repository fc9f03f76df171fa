import HuddleCrypto
import HuddleProtocol
import HuddleWire
import Testing

/// `Endpoint.computeNextDeadline()` (what the transport asks after every input, in place) must always agree with
/// `nextDeadline` (what the simulator asks): through a handshake, pending acknowledgements and loss probes, with a
/// relay registration due, and after a connection closes.
@Suite("Endpoint deadlines")
struct EndpointDeadlineTests {
    static func credentials(for key: X25519PublicKey) -> PeerCredentials {
        PeerCredentials(staticKey: key, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2))
    }

    /// Both ways of asking, on `endpoint` as it is; the in-place one runs on a copy so the check changes nothing.
    static func expectAgreement(_ endpoint: Endpoint, _ stage: String) {
        var copy = endpoint
        #expect(copy.computeNextDeadline() == endpoint.nextDeadline, "\(stage)")
    }

    @Test("computeNextDeadline equals nextDeadline at every stage of a connection's life")
    func inPlaceMatchesGetter() throws {
        var a = EndpointPair.endpoint(seed: 1)
        var b = EndpointPair.endpoint(seed: 2)
        Self.expectAgreement(a, "idle, no peers")
        #expect(a.nextDeadline == nil)
        try a.addPeer(Self.credentials(for: b.staticKey))
        try b.addPeer(Self.credentials(for: a.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        Self.expectAgreement(a, "initiation queued")
        _ = EndpointPair.drain(&a, now: .zero)
        Self.expectAgreement(a, "initiation sent, retry pending")
        #expect(a.nextDeadline != nil)
        _ = EndpointPair.exchange(&a, &b, now: .zero)
        Self.expectAgreement(a, "established")
        Self.expectAgreement(b, "established (responder)")

        var now = Instant.zero + .milliseconds(5)
        let id = try #require(a.connectionIDs.first)
        _ = try a.send([1, 2, 3], on: ChannelID(16), to: id)
        _ = EndpointPair.drain(&a, now: now)
        Self.expectAgreement(a, "message in flight, loss probe armed")
        a.addRelay(EndpointPair.address(9), now: now)
        Self.expectAgreement(a, "relay registration due")
        now = now + .milliseconds(400)
        a.handleTimeout(now: now)
        Self.expectAgreement(a, "after a probe timeout")
        _ = EndpointPair.exchange(&a, &b, now: now)
        Self.expectAgreement(b, "acknowledgement pending at the receiver")
        Self.expectAgreement(a, "acknowledged")

        // Far past the idle timeout: the connections close and are forgotten.
        now = now + .seconds(600)
        a.handleTimeout(now: now)
        b.handleTimeout(now: now)
        Self.expectAgreement(a, "idle timeout")
        Self.expectAgreement(b, "idle timeout (responder)")
    }
}
