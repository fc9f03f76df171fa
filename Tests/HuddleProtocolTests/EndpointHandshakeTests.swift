import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

@Suite("Endpoint handshake drop rules")
struct EndpointHandshakeTests {
    /// `a` and `b` know each other (member credentials); `a` has started a handshake and its initiation is returned.
    static func members() throws -> (a: Endpoint, b: Endpoint, initiation: [UInt8]) {
        var a = EndpointPair.endpoint(seed: 1)
        var b = EndpointPair.endpoint(seed: 2)
        try a.addPeer(
            PeerCredentials(
                staticKey: b.staticKey, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2)))
        try b.addPeer(
            PeerCredentials(
                staticKey: a.staticKey, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2)))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        let sent = EndpointPair.drain(&a, now: .zero)
        try #require(sent.count == 1 && sent[0].count == 152)
        return (a, b, sent[0])
    }

    @Test("A fresh answer is a handshake in progress: a redial starts its own only once the answer went unconfirmed")
    func redialLeavesAFreshAnswerAlone() throws {
        let (a, b0, initiation) = try Self.members()
        var b = b0
        b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero)
        #expect(EndpointPair.drain(&b, now: .zero).count == 1, "b answers")
        // Right after answering (the redials of both sides fell due together): a new initiation of b's would
        // supersede the connection a establishes with this answer. Before the fix it was sent, on both sides, at every
        // redial (churn-schedule seed 1560: two members never met again).
        let soon = Instant.zero + .milliseconds(1)
        let early = b.initiateIfOnlyAnswering(a.staticKey, now: soon)
        #expect(!early)
        #expect(EndpointPair.drain(&b, now: soon).isEmpty)
        // Unconfirmed for a whole retry interval (the answer went to an initiation a replaced, or a paused): b starts
        // its own (TEST-MATRIX X2).
        let retry = ConnectionConfiguration().handshakeRetryInterval
        let late = b.initiateIfOnlyAnswering(a.staticKey, now: .zero + retry)
        #expect(late)
        #expect(EndpointPair.drain(&b, now: .zero + retry).count == 1)
    }

    @Test("An initiation from a static key not in the roster, with a valid member mac1, is dropped after DH (H3)")
    func strangerWithMemberMac() throws {
        var (_, b, _) = try Self.members()
        var stranger = EndpointPair.endpoint(seed: 3)
        // The stranger knows b's key and the member mac secret, but b never added it.
        try stranger.addPeer(
            PeerCredentials(
                staticKey: b.staticKey, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2)))
        try stranger.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        for datagram in EndpointPair.drain(&stranger, now: .zero) {
            b.handle(datagram: datagram, from: EndpointPair.address(3), now: .zero)
        }
        #expect(b.statistics.initiationsProcessed == 1)
        #expect(b.statistics.unknownPeerDropped == 1)
        #expect(EndpointPair.drain(&b, now: .zero).isEmpty, "nothing may be sent to a stranger")
        #expect(b.connectionIDs.isEmpty)
    }

    @Test("An initiation with a bad mac1 costs no Diffie-Hellman and gets no reply (H4)")
    func badMac1() throws {
        var (_, b, initiation) = try Self.members()
        var forged = initiation
        forged[HandshakeInitiation.mac1Offset] ^= 1
        b.handle(datagram: forged, from: EndpointPair.address(1), now: .zero)
        #expect(b.statistics.mac1Failures == 1)
        #expect(b.statistics.initiationsProcessed == 0)
        #expect(EndpointPair.drain(&b, now: .zero).isEmpty)
    }

    @Test("Initiations of 151 or 153 bytes, or with reserved bytes set, are dropped before any crypto (H5)")
    func malformedInitiations() throws {
        var (_, b, initiation) = try Self.members()
        var reserved = initiation
        reserved[1] = 1
        for datagram in [Array(initiation.dropLast()), initiation + [0], reserved] {
            b.handle(datagram: datagram, from: EndpointPair.address(1), now: .zero)
        }
        #expect(b.statistics.malformedDropped == 3)
        #expect(b.statistics.mac1Failures == 0)
        #expect(b.statistics.initiationsProcessed == 0)
        #expect(EndpointPair.drain(&b, now: .zero).isEmpty)
    }

    @Test("A replayed initiation (same timestamp) is dropped and the session is unchanged (H6, R5)")
    func replayedInitiation() throws {
        var (a, b, initiation) = try Self.members()
        b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero)
        let response = EndpointPair.drain(&b, now: .zero)
        #expect(response.count == 1 && response[0].count == 92)
        for datagram in response { a.handle(datagram: datagram, from: EndpointPair.address(2), now: .zero) }
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(1))

        b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero + .seconds(3600))
        #expect(b.statistics.staleTimestampDropped == 1)
        #expect(b.statistics.responsesSent == 1)
        #expect(EndpointPair.drain(&b, now: .zero + .seconds(3600)).isEmpty)

        // The existing session keeps working.
        let id = try #require(a.connectionID(for: b.staticKey))
        _ = try a.send([1, 2, 3], on: ChannelID(16), to: id)
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(2))
        let messages = EndpointPair.events(&b).compactMap { event -> [UInt8]? in
            if case .message(_, _, let bytes) = event { return bytes }
            return nil
        }
        #expect(messages == [[1, 2, 3]])
    }

    @Test("A second valid initiation 10 ms after the first is dropped as a flood (H7)")
    func initiationFlood() throws {
        var (a, b, first) = try Self.members()
        // A copy of the initiator, connecting 10 ms later, makes a second initiation with a newer timestamp.
        var twin = EndpointPair.endpoint(seed: 1)
        try twin.addPeer(
            PeerCredentials(
                staticKey: b.staticKey, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2)))
        try twin.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero + .milliseconds(10))
        let second = EndpointPair.drain(&twin, now: .zero + .milliseconds(10))
        try #require(second.count == 1)
        _ = a

        b.handle(datagram: first, from: EndpointPair.address(1), now: .zero)
        #expect(EndpointPair.drain(&b, now: .zero).count == 1)
        b.handle(datagram: second[0], from: EndpointPair.address(1), now: .zero + .milliseconds(10))
        #expect(b.statistics.floodDropped == 1)
        #expect(EndpointPair.drain(&b, now: .zero + .milliseconds(10)).isEmpty)
    }

    @Test("The responder sends no data before the initiator confirms the keys (H2)")
    func responderWaitsForConfirmation() throws {
        var (a, b, initiation) = try Self.members()
        b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero)
        let id = try #require(b.connectionID(for: a.staticKey))
        _ = try? b.send([9, 9, 9], on: ChannelID(16), to: id)
        let beforeConfirmation = EndpointPair.drain(&b, now: .zero)
        #expect(beforeConfirmation.map(\.count) == [92], "only the handshake response")

        for datagram in beforeConfirmation { a.handle(datagram: datagram, from: EndpointPair.address(2), now: .zero) }
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(1))
        let delivered = EndpointPair.events(&a).contains { event in
            if case .message(_, _, let bytes) = event { return bytes == [9, 9, 9] }
            return false
        }
        #expect(delivered, "queued data flows once the keys are confirmed")
    }
}
