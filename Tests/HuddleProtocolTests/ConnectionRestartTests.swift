import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// A handshake either continues a connection both sides hold (a rekey names the responder's keypair) or starts a new
/// one; message sequences never continue across a restart on one side only (issue 11), and unanswered initiations
/// are retried from 250 ms with backoff.
@Suite("Connections across a restart, and handshake retry timing")
struct ConnectionRestartTests {
    static let channel = ChannelID(16)

    static func credentials(for key: X25519PublicKey) -> PeerCredentials { EndpointPair.credentials(for: key) }

    /// `a` (seed 1) and `b` (seed 2), connected and established at time zero.
    static func connected() throws -> (a: Endpoint, b: Endpoint) { try EndpointPair.connected() }

    /// `a` (seed 1) initiates to `b` (seed 2), then its credentials for `b` become `next` and it initiates again
    /// at once; returns both endpoints and the two initiations' datagrams, neither delivered yet.
    static func twoInitiations(
        switchingTo next: PeerCredentials
    ) throws -> (a: Endpoint, b: Endpoint, first: [[UInt8]], second: [[UInt8]]) {
        var a = EndpointPair.endpoint(seed: 1)
        var b = EndpointPair.endpoint(seed: 2)
        try a.addPeer(credentials(for: b.staticKey))
        try b.addPeer(credentials(for: a.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        let first = EndpointPair.drain(&a, now: .zero)
        try a.addPeer(next)
        a.handleTimeout(now: .zero + .milliseconds(1))
        return (a, b, first, EndpointPair.drain(&a, now: .zero + .milliseconds(1)))
    }

    /// Runs both endpoints' timers and exchanges their datagrams every second from `start` until `end` (keepalives
    /// keep the connection alive, rekeys happen on their own).
    static func advance(_ a: inout Endpoint, _ b: inout Endpoint, from start: Instant, to end: Instant) {
        var now = start
        while now < end {
            now = now + .seconds(1)
            a.handleTimeout(now: now)
            b.handleTimeout(now: now)
            EndpointPair.exchange(&a, &b, now: now)
        }
    }

    static func messages(_ endpoint: inout Endpoint) -> [[UInt8]] {
        EndpointPair.events(&endpoint).compactMap {
            if case .message(_, _, let bytes) = $0 { return bytes }
            return nil
        }
    }

    @Test("A peer that restarts and connects again supersedes the old connection; messages flow from sequence 0 again")
    func restartedPeerSupersedes() throws {
        var (a, b) = try Self.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        // Traffic on the first connection: b's receive sequence moves past 0.
        let first = try #require(a.connectionID(for: b.staticKey))
        for index in 0..<3 { _ = try a.send([UInt8(index)], on: Self.channel, to: first) }
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(1))
        #expect(Self.messages(&b) == [[0], [1], [2]])
        // b sends one more message that a never acknowledges before it crashes.
        let bToA = try #require(b.connectionID(for: a.staticKey))
        _ = try b.send([9], on: Self.channel, to: bToA)
        _ = EndpointPair.drain(&b, now: .zero + .milliseconds(2))
        // a restarts: same identity (seed 1), no state, a later wall clock; it connects again from sequence 0.
        var restarted = EndpointPair.endpoint(seed: 1)
        try restarted.addPeer(Self.credentials(for: b.staticKey))
        try restarted.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero + .seconds(5))
        let fresh = try #require(restarted.connectionID(for: b.staticKey))
        _ = try restarted.send([42], on: Self.channel, to: fresh)
        EndpointPair.exchange(&restarted, &b, now: .zero + .seconds(5))
        #expect(b.statistics.connectionsSuperseded == 1)
        let events = EndpointPair.events(&b)
        let closed = events.compactMap { event -> (ProtocolError?, [UndeliveredMessage])? in
            if case .closed(_, _, let reason, let undelivered) = event { return (reason, undelivered) }
            return nil
        }
        #expect(closed.count == 1)
        #expect(closed.first?.0 == .superseded)
        #expect(closed.first?.1.count == 1, "b's unacknowledged message to the old a is reported, not resent")
        let delivered = events.compactMap { event -> [UInt8]? in
            if case .message(_, _, let bytes) = event { return bytes }
            return nil
        }
        #expect(delivered == [[42]], "sequence 0 of the new connection is not taken for a duplicate")
        #expect(b.liveConnectionID(for: restarted.staticKey) != bToA)
    }

    @Test("A rekey names the responder's keypair and continues the connection (no messages lost or repeated)")
    func rekeyContinues() throws {
        var (a, b) = try Self.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        let id = try #require(a.connectionID(for: b.staticKey))
        _ = try a.send([1], on: Self.channel, to: id)
        EndpointPair.exchange(&a, &b, now: .zero + .seconds(1))
        // Past the rekey time (120 s) the initiator starts a new handshake on the same connection.
        Self.advance(&a, &b, from: .zero + .seconds(1), to: .zero + .seconds(125))
        _ = try a.send([2], on: Self.channel, to: id)
        Self.advance(&a, &b, from: .zero + .seconds(125), to: .zero + .seconds(127))
        #expect(b.statistics.connectionsSuperseded == 0)
        #expect(b.statistics.staleResumptionsDropped == 0)
        #expect(a.connection(id)!.statistics.handshakes >= 2, "a rekeyed")
        #expect(Self.messages(&b) == [[1], [2]])
    }

    @Test("A rekey for a connection the responder no longer has is dropped, not installed")
    func staleRekeyDropped() throws {
        var (a, b) = try Self.connected()
        Self.advance(&a, &b, from: .zero, to: .zero + .seconds(119))
        // b restarts and knows a again, but has no connection: a's rekey must not create one under old sequences.
        var restarted = EndpointPair.endpoint(seed: 2)
        try restarted.addPeer(Self.credentials(for: a.staticKey))
        let now = Instant.zero + .seconds(121)
        a.handleTimeout(now: now)
        let rekey = EndpointPair.drain(&a, now: now).filter { $0.count == HandshakeInitiation.encodedLength }
        #expect(!rekey.isEmpty)
        for datagram in rekey { restarted.handle(datagram: datagram, from: EndpointPair.address(1), now: now) }
        #expect(restarted.statistics.staleResumptionsDropped >= 1)
        #expect(restarted.connectionIDs.isEmpty)
        #expect(EndpointPair.drain(&restarted, now: now).isEmpty)
    }

    @Test("A response to the initiation a credentials change replaced still completes the handshake (no retry wait)")
    func responseToSupersededInitiation() throws {
        // a's first initiation goes out under one set of credentials (a joiner's invitation credentials), then a
        // switches to new credentials (member credentials after its WELCOME) and initiates again at once.
        var (a, b, first, second) = try Self.twoInitiations(
            switchingTo: PeerCredentials(
                staticKey: EndpointPair.endpoint(seed: 2).staticKey, presharedKey: EndpointPair.secret(7),
                macSecret: EndpointPair.secret(8)))
        #expect(second.count == 1 && a.statistics.initiationsSent == 2)
        // b, still holding the first credentials, answers the first initiation; that response must complete it.
        EndpointPair.deliver(first, to: &b, from: 1, now: .zero + .milliseconds(2))
        let response = EndpointPair.drain(&b, now: .zero + .milliseconds(2))
        EndpointPair.deliver(response, to: &a, from: 2, now: .zero + .milliseconds(3))
        #expect(a.statistics.responsesDropped == 0)
        let id = try #require(a.connectionID(for: b.staticKey))
        #expect(a.connection(id)?.state == .established)
        // And traffic flows both ways under it: the index the keypair was made from still routes b's packets to a
        // (retiring it with the superseded initiation left a deaf to b, and every message of b's unacknowledged).
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        _ = try a.send([1], on: Self.channel, to: id)
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(4))
        let toA = try #require(b.connectionID(for: a.staticKey))
        _ = try b.send([2], on: Self.channel, to: toA)
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(5))
        #expect(Self.messages(&a) == [[2]])
        #expect(a.statistics.unknownIndexDropped == 0)
    }

    @Test("The responder answered both initiations; the initiator completes with the first answer: traffic flows")
    func responderAnsweredBoth() throws {
        // a's credentials change (to the same values: b accepts both); it initiates again at once. b answers the
        // first initiation, then the second (more than 20 ms apart: closer initiations are dropped as a flood).
        var (a, b, first, second) = try Self.twoInitiations(
            switchingTo: Self.credentials(for: EndpointPair.endpoint(seed: 2).staticKey))
        #expect(second.count == 1)
        EndpointPair.deliver(first, to: &b, from: 1, now: .zero + .milliseconds(30))
        let firstResponse = EndpointPair.drain(&b, now: .zero + .milliseconds(30))
        EndpointPair.deliver(second, to: &b, from: 1, now: .zero + .milliseconds(60))
        let secondResponse = EndpointPair.drain(&b, now: .zero + .milliseconds(60))
        #expect(firstResponse.count == 1 && secondResponse.count == 1)
        // Only the first response reaches a (the second is lost): a completes with it.
        EndpointPair.deliver(firstResponse, to: &a, from: 2, now: .zero + .milliseconds(61))
        let id = try #require(a.connectionID(for: b.staticKey))
        #expect(a.connection(id)?.state == .established)
        _ = try a.send([1], on: Self.channel, to: id)
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(62))
        #expect(Self.messages(&b) == [[1]], "b takes the keys a completed with")
        #expect(b.statistics.unknownIndexDropped == 0)
        let toA = try #require(b.connectionID(for: a.staticKey))
        #expect(b.connection(toA)?.state == .established)
        _ = try b.send([2], on: Self.channel, to: toA)
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(63))
        #expect(Self.messages(&a) == [[2]])
    }

    @Test("A lost response: the initiator resends the same initiation and the responder answers it again")
    func lostResponseRecovered() throws {
        var a = EndpointPair.endpoint(seed: 1)
        var b = EndpointPair.endpoint(seed: 2)
        try a.addPeer(Self.credentials(for: b.staticKey))
        try b.addPeer(Self.credentials(for: a.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        let first = EndpointPair.drain(&a, now: .zero)
        for datagram in first { b.handle(datagram: datagram, from: EndpointPair.address(1), now: .zero) }
        let lostResponse = EndpointPair.drain(&b, now: .zero)
        #expect(lostResponse.count == 1)
        // The response is lost; 250 ms (plus jitter) later a sends the very same bytes again.
        let deadline = a.nextDeadline  // a `mutating get`: read outside the macro
        let retryAt = try #require(deadline)
        a.handleTimeout(now: retryAt)
        let resent = EndpointPair.drain(&a, now: retryAt)
        #expect(resent == first, "the first retries resend the same initiation")
        for datagram in resent { b.handle(datagram: datagram, from: EndpointPair.address(1), now: retryAt) }
        #expect(b.statistics.duplicateInitiationsAnswered == 1)
        #expect(b.statistics.staleTimestampDropped == 0)
        let again = EndpointPair.drain(&b, now: retryAt)
        #expect(again == lostResponse, "the same response, no second handshake")
        for datagram in again { a.handle(datagram: datagram, from: EndpointPair.address(2), now: retryAt) }
        let id = try #require(a.connectionID(for: b.staticKey))
        #expect(a.connection(id)?.state == .established)
    }

    @Test("H8: unanswered initiations are retried after 250 ms, 500 ms, 1 s, 2 s, 4 s, then every 5 s (+ jitter)")
    func retryBackoff() throws {
        var a = EndpointPair.endpoint(seed: 1)
        let b = EndpointPair.endpoint(seed: 2)
        try a.addPeer(Self.credentials(for: b.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        var sentAt: [Instant] = []
        var now = Instant.zero
        while now < .zero + .seconds(20) {
            if !EndpointPair.drain(&a, now: now).isEmpty { sentAt.append(now) }
            guard let deadline = a.nextDeadline else { break }
            now = max(deadline, now + .milliseconds(1))
            a.handleTimeout(now: now)
        }
        let gaps = zip(sentAt.dropFirst(), sentAt).map { $0 - $1 }
        let expected: [Duration] = [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4)]
        #expect(gaps.count >= 6, "\(gaps)")
        for (gap, base) in zip(gaps, expected + [.seconds(5), .seconds(5)]) {
            #expect(gap >= base && gap <= base + min(.milliseconds(333), base / 4) + .milliseconds(1), "\(gaps)")
        }
    }
}
