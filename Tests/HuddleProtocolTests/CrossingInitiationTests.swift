import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// A simultaneous open whose losing initiation arrives after the winner's handshake completed (the NAT lab's finding
/// 6: the two initiations crossed on two paths, the direct one and a relay's, and the slower copy came last).
@Suite("Crossing initiations")
struct CrossingInitiationTests {
    /// Two endpoints that know each other, named by which static key sorts first (the winner of a simultaneous open).
    static func acquainted() throws -> (small: Endpoint, large: Endpoint) {
        var one = EndpointPair.endpoint(seed: 11)
        var two = EndpointPair.endpoint(seed: 12)
        try one.addPeer(EndpointPair.credentials(for: two.staticKey))
        try two.addPeer(EndpointPair.credentials(for: one.staticKey))
        return one.staticKey.bytes.lexicographicallyPrecedes(two.staticKey.bytes) ? (one, two) : (two, one)
    }

    /// `small` and `large` (by static key) know each other; each has started a handshake to the other.
    static func crossing() throws -> (small: Endpoint, large: Endpoint, smallInit: [UInt8], largeInit: [UInt8]) {
        var (small, large) = try acquainted()
        try small.connect(to: large.staticKey, at: EndpointPair.address(2), now: .zero)
        try large.connect(to: small.staticKey, at: EndpointPair.address(1), now: .zero)
        let smallInit = EndpointPair.drain(&small, now: .zero)
        let largeInit = EndpointPair.drain(&large, now: .zero)
        try #require(smallInit.count == 1 && largeInit.count == 1)
        return (small, large, smallInit[0], largeInit[0])
    }

    @Test(
        "The loser's initiation, arriving after the winner's handshake completed, is dropped as a crossing one: the connection stays, data flows"
    )
    func lateLosingInitiation() throws {
        var (small, large, smallInit, largeInit) = try Self.crossing()
        // The winner's initiation arrives first (the direct path): the loser answers it and drops its own.
        large.handle(datagram: smallInit, from: EndpointPair.address(1), now: .zero + .milliseconds(1))
        let response = EndpointPair.drain(&large, now: .zero + .milliseconds(1))
        try #require(response.count == 1)
        small.handle(datagram: response[0], from: EndpointPair.address(2), now: .zero + .milliseconds(2))
        let established = small.connectionIDs
        _ = EndpointPair.events(&small)
        // Then the loser's initiation, sent before it knew, arrives by the slower path (a relay).
        small.handle(datagram: largeInit, from: EndpointPair.address(2), now: .zero + .milliseconds(30))
        #expect(small.statistics.connectionsSuperseded == 0)
        #expect(small.statistics.simultaneousInitiationsDropped == 1)
        #expect(small.connectionIDs == established)
        let events = EndpointPair.events(&small)
        #expect(
            !events.contains { if case .closed = $0 { true } else { false } },
            "the connection was not replaced: \(events)")
        // The handshake they completed carries data both ways.
        EndpointPair.exchange(&small, &large, now: .zero + .milliseconds(31))
        let smallID = try #require(small.connectionIDs.first)
        let largeID = try #require(large.connectionIDs.first)
        _ = try small.send(Array("to large".utf8), on: ChannelID(1), to: smallID)
        _ = try large.send(Array("to small".utf8), on: ChannelID(1), to: largeID)
        EndpointPair.exchange(&small, &large, now: .zero + .milliseconds(32))
        let atLarge = EndpointPair.events(&large).compactMap { event -> [UInt8]? in
            if case .message(_, _, let bytes) = event { bytes } else { nil }
        }
        let atSmall = EndpointPair.events(&small).compactMap { event -> [UInt8]? in
            if case .message(_, _, let bytes) = event { bytes } else { nil }
        }
        #expect(atLarge == [Array("to large".utf8)] && atSmall == [Array("to small".utf8)])
    }

    @Test("A peer that restarts later (past the crossing window) still supersedes the connection")
    func laterInitiationSupersedes() throws {
        var (small, large, smallInit, _) = try Self.crossing()
        large.handle(datagram: smallInit, from: EndpointPair.address(1), now: .zero + .milliseconds(1))
        let response = EndpointPair.drain(&large, now: .zero + .milliseconds(1))
        small.handle(datagram: response[0], from: EndpointPair.address(2), now: .zero + .milliseconds(2))
        // The large side restarts: a new endpoint with the same identity dials again, well after the handshake.
        var restarted = EndpointPair.endpoint(
            seed: large.staticKey == EndpointPair.endpoint(seed: 11).staticKey ? 11 : 12)
        try restarted.addPeer(EndpointPair.credentials(for: small.staticKey))
        let later = Instant.zero + ProtocolLimits.crossingInitiationWindow + .milliseconds(10)
        try restarted.connect(to: small.staticKey, at: EndpointPair.address(1), now: later)
        for datagram in EndpointPair.drain(&restarted, now: later) {
            small.handle(datagram: datagram, from: EndpointPair.address(2), now: later)
        }
        #expect(small.statistics.connectionsSuperseded == 1)
    }

    /// The winner of a simultaneous open dialled an address that does not reach the loser (a symmetric NAT's mapping
    /// toward another member, which is what a roster names), while the loser's initiation came from the address its
    /// NAT opened toward the winner. The winner's one resend goes there, so the loser answers it; before, it went
    /// to the dialled address again and the two never met without a relay (a public member with the smaller key
    /// and a member behind a symmetric NAT, in the member-relay simulations).
    @Test("The winner of a simultaneous open resends its initiation to where the loser's came from")
    func winnerResendsToTheLosersSource() throws {
        var (small, large) = try Self.acquainted()
        let unreachable = NetworkAddress(ipv4: 203, 0, 113, 1, port: 40_000)
        let opened = NetworkAddress(ipv4: 203, 0, 113, 1, port: 40_001)
        try small.connect(to: large.staticKey, at: unreachable, now: .zero)
        try large.connect(to: small.staticKey, at: EndpointPair.address(1), now: .zero)
        let sent = small.pollTransmit(now: .zero)
        let smallInit = try #require(sent)
        #expect(smallInit.destination == unreachable)
        let largeInit = EndpointPair.drain(&large, now: .zero)
        try #require(largeInit.count == 1)
        small.handle(datagram: largeInit[0], from: opened, now: .zero + .milliseconds(10))
        #expect(small.statistics.simultaneousInitiationsDropped == 1)
        let resent = small.pollTransmit(now: .zero + .milliseconds(10))
        let resend = try #require(resent)
        #expect(resend.destination == opened)
        #expect(resend.datagram == smallInit.datagram, "the same initiation, once more")
        // The loser answers it, and the winner's connection comes up on that address.
        large.handle(datagram: resend.datagram, from: EndpointPair.address(1), now: .zero + .milliseconds(20))
        let response = EndpointPair.drain(&large, now: .zero + .milliseconds(20))
        try #require(response.count == 1)
        small.handle(datagram: response[0], from: opened, now: .zero + .milliseconds(30))
        let id = try #require(small.connectionID(for: large.staticKey))
        #expect(small.connection(id)?.state == .established)
        #expect(small.connection(id)?.route == .direct(opened))
    }
}
