import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// TEST-MATRIX D11: a keypair under which too many packets failed authentication (2^24 by default; lowered here
/// through the configuration) accepts nothing more and is replaced by a new handshake at
/// once, from the side that saw the forgeries; the connection carries on under the new keys.
@Suite("The integrity limit of a keypair")
struct KeypairIntegrityLimitTests {
    static let channel = ChannelID(16)

    @Test("At the limit of failed packets a keypair accepts nothing more and its receiver rekeys at once")
    func exhaustedKeypairIsRekeyed() throws {
        let limit: UInt64 = 4
        var limited = ConnectionConfiguration()
        limited.maxAuthenticationFailuresPerKeypair = limit
        var a = EndpointPair.endpoint(seed: 1)
        var b = EndpointPair.endpoint(seed: 2, connection: limited)
        try a.addPeer(ConnectionRestartTests.credentials(for: b.staticKey))
        try b.addPeer(ConnectionRestartTests.credentials(for: a.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        EndpointPair.exchange(&a, &b, now: .zero)
        _ = EndpointPair.events(&b)
        let atA = try #require(a.connectionID(for: b.staticKey))
        let atB = try #require(b.connectionID(for: a.staticKey))
        let handshakes = try #require(b.connection(atB)).statistics.handshakes
        var now = Instant.zero + .milliseconds(1)

        // A genuine packet of a's with one ciphertext bit flipped: a forgery under b's current keypair.
        _ = try a.send(Array("held back".utf8), on: Self.channel, to: atA)
        var forged = try #require(EndpointPair.drain(&a, now: now).first)
        forged[forged.count - 1] ^= 0x01
        for _ in 0..<(limit - 1) { b.handle(datagram: forged, from: EndpointPair.address(1), now: now) }
        #expect(b.statistics.transportRejected == Int(limit) - 1)
        // One below the limit the keypair still works: a genuine packet is accepted (its message waits for the
        // forged one's retransmission: the channel is ordered).
        _ = try a.send(Array("still fine".utf8), on: Self.channel, to: atA)
        EndpointPair.deliver(EndpointPair.drain(&a, now: now), to: &b, from: 1, now: now)
        #expect(b.statistics.transportRejected == Int(limit) - 1, "accepted")

        // The limit-th failure exhausts it: a genuine packet is refused too, until the rekey.
        b.handle(datagram: forged, from: EndpointPair.address(1), now: now)
        _ = try a.send(Array("refused".utf8), on: Self.channel, to: atA)
        let refused = EndpointPair.drain(&a, now: now)
        EndpointPair.deliver(refused, to: &b, from: 1, now: now)
        #expect(refused.count >= 1)
        #expect(ConnectionRestartTests.messages(&b).isEmpty, "an exhausted keypair opens nothing")
        #expect(b.statistics.transportRejected == Int(limit) + refused.count)
        #expect(try #require(b.connection(atB)).statistics.keypairsExhausted == 1, "counted once")

        // b rekeys at its next timeout (not 120 s later), and everything a sent arrives under the new keys.
        let deadline = b.nextDeadline  // a `mutating get`: read outside the macro
        #expect(try #require(deadline) <= now)
        now = now + .milliseconds(1)
        b.handleTimeout(now: now)
        EndpointPair.exchange(&a, &b, now: now)
        #expect(try #require(b.connection(atB)).statistics.handshakes == handshakes + 1, "a rekey happened")
        ConnectionRestartTests.advance(&a, &b, from: now, to: now + .seconds(3))
        let delivered = ConnectionRestartTests.messages(&b)
        #expect(
            delivered == ["held back", "still fine", "refused"].map { Array($0.utf8) },
            "in order, the lost ones retransmitted under the new keys")
        #expect(b.connection(atB)?.state == .established)
    }
}
