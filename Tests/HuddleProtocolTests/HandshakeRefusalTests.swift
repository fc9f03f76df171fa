import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// A responder refuses an initiation of another protocol revision (its `mac1` verifies, its Noise message does not
/// read) with a HANDSHAKE_REFUSED naming its own prologue, and the initiator fails at once naming both
/// (docs/PROTOCOL.md 2.5, 7.6).
@Suite("Handshake refusal between protocol revisions")
struct HandshakeRefusalTests {
    static let newer = Array("huddle/2 endpoint tests".utf8)

    /// `a` (seed 1, speaking `prologueA`) and `b` (seed 2, speaking `prologueB`) know each other; `a` has started a
    /// handshake with `b` and its initiation is returned.
    static func dialing(
        prologueA: [UInt8] = EndpointPair.prologue, prologueB: [UInt8] = newer, macSecretOfA: UInt64 = 2
    ) throws -> (a: Endpoint, b: Endpoint, initiation: HandshakeInitiation, bytes: [UInt8]) {
        var a = EndpointPair.endpoint(seed: 1, prologue: prologueA)
        var b = EndpointPair.endpoint(seed: 2, prologue: prologueB)
        try a.addPeer(
            PeerCredentials(
                staticKey: b.staticKey, presharedKey: EndpointPair.secret(1),
                macSecret: EndpointPair.secret(macSecretOfA)))
        try b.addPeer(EndpointPair.credentials(for: a.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        let sent = EndpointPair.drain(&a, now: .zero)
        try #require(sent.count == 1)
        return (a, b, try HandshakeInitiation(decoding: sent[0]), sent[0])
    }

    /// A refusal of `initiation` naming `prologue`, sealed under the cookie key of `b`'s member credentials
    /// (`macSecret` 2 unless given), or `nil` when it cannot be built.
    static func refusal(
        of initiation: HandshakeInitiation, naming prologue: [UInt8], from b: Endpoint, macSecret: UInt64 = 2
    ) throws -> [UInt8] {
        let authenticator = try MacAuthenticator(
            macSecret: EndpointPair.secret(macSecret), receiverStatic: b.staticKey)
        let nonce = [UInt8](repeating: 7, count: 24)
        let sealed = try authenticator.sealRefusal(
            try #require(HandshakeRefusal.plaintext(naming: prologue)), nonce: nonce,
            header: HandshakeRefusal.header(receiverIndex: initiation.senderIndex), answeringMac1: initiation.mac1)
        return try HandshakeRefusal(receiverIndex: initiation.senderIndex, nonce: nonce, encryptedPrologue: sealed)
            .encoded()
    }

    static func closeReasons(_ endpoint: inout Endpoint) -> [ProtocolError?] {
        EndpointPair.events(&endpoint).compactMap { event in
            if case .closed(_, _, let reason, _) = event { return reason }
            return nil
        }
    }

    @Test("either side of a revision change refuses the other, and the initiator fails at once naming both")
    func refusedBothWays() throws {
        for (ours, theirs) in [(EndpointPair.prologue, Self.newer), (Self.newer, EndpointPair.prologue)] {
            var (a, b, _, initiation) = try Self.dialing(prologueA: ours, prologueB: theirs)
            b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero)
            #expect(b.statistics.handshakeFailures == 1)
            #expect(b.statistics.refusalsSent == 1)
            let answers = EndpointPair.drain(&b, now: .zero)
            #expect(answers.map(\.count) == [80], "one refusal, smaller than the initiation")
            #expect(b.liveConnectionID(for: a.staticKey) == nil, "a refusal keeps no state")
            EndpointPair.deliver(answers, to: &a, from: 2, now: .zero + .milliseconds(1))
            #expect(a.statistics.refusalsAccepted == 1)
            #expect(Self.closeReasons(&a) == [.incompatibleProtocol(ours: ours, theirs: theirs)])
            // Closed: no retry follows, not even after the retry interval.
            let later = Instant.zero + .seconds(2)
            a.handleTimeout(now: later)
            #expect(EndpointPair.drain(&a, now: later).filter { $0.count == 152 }.isEmpty)
        }
    }

    @Test("an initiation without a valid mac1 gets nothing: strangers never learn the revision")
    func strangersLearnNothing() throws {
        var (_, b, _, initiation) = try Self.dialing(macSecretOfA: 9)
        b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero)
        #expect(b.statistics.mac1Failures == 1)
        #expect(b.statistics.refusalsSent == 0)
        #expect(EndpointPair.drain(&b, now: .zero).isEmpty)
    }

    @Test("a refusal naming the initiator's own revision, forged, altered or for another index changes nothing")
    func refusalsThatDoNotCount() throws {
        var (a, b, layout, initiation) = try Self.dialing(prologueB: EndpointPair.prologue)
        var other = layout
        other.senderIndex = ReceiverIndex(layout.senderIndex.rawValue &+ 1)
        var altered = try Self.refusal(of: layout, naming: Self.newer, from: b)
        altered[40] ^= 1
        let refusals = [
            try Self.refusal(of: layout, naming: EndpointPair.prologue, from: b),
            try Self.refusal(of: layout, naming: Self.newer, from: b, macSecret: 9),
            altered,
            try Self.refusal(of: other, naming: Self.newer, from: b),
        ]
        EndpointPair.deliver(refusals, to: &a, from: 2, now: .zero)
        #expect(a.statistics.refusalsAccepted == 0)
        #expect(a.statistics.responsesDropped == 4)
        #expect(Self.closeReasons(&a).isEmpty)
        // The handshake still completes with the real responder.
        b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero)
        EndpointPair.exchange(&a, &b, now: .zero)
        #expect(a.liveConnectionID(for: b.staticKey).flatMap { a.connection($0) }?.state == .established)
    }

    @Test("a refusal never ends an established connection, not even of its pending rekey")
    func establishedConnectionsIgnoreRefusals() throws {
        var (a, b, _, initiation) = try Self.dialing(prologueB: EndpointPair.prologue)
        b.handle(datagram: initiation, from: EndpointPair.address(1), now: .zero)
        EndpointPair.exchange(&a, &b, now: .zero)
        let id = try #require(a.liveConnectionID(for: b.staticKey))
        #expect(a.connection(id)?.state == .established)
        // Up to just before the 120 s rekey with traffic both ways, then `a` alone: its rekey initiation goes out.
        ConnectionRestartTests.advance(&a, &b, from: .zero, to: .zero + .seconds(119))
        _ = EndpointPair.events(&a)
        let rekeyAt = Instant.zero + .seconds(121)
        a.handleTimeout(now: rekeyAt)
        let rekey = try #require(
            EndpointPair.drain(&a, now: rekeyAt).first { $0.count == HandshakeInitiation.encodedLength })
        // Sealed under the right credentials for that initiation: only a connection still setting up may fail so.
        let refusal = try Self.refusal(of: try HandshakeInitiation(decoding: rekey), naming: Self.newer, from: b)
        EndpointPair.deliver([refusal], to: &a, from: 2, now: rekeyAt)
        #expect(a.statistics.refusalsAccepted == 0)
        #expect(Self.closeReasons(&a).isEmpty)
        #expect(a.connection(id)?.state == .established)
    }
}
