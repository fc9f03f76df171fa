import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// TEST-MATRIX R3 and H10: a transport datagram recorded on the wire and replayed later, after a rekey replaced its
/// keys and after those keys expired, and into a restarted endpoint that never issued its receiver index. Each time
/// it is dropped and counted, delivers nothing, and leaves the connection as it was.
@Suite("Replays across key changes and restarts")
struct ReplayAcrossKeysTests {
    static let channel = ChannelID(16)

    /// Sends one message from `a` to `b` at `now` and returns the datagram that carried it (delivered to `b`).
    static func recordedMessage(
        _ a: inout Endpoint, _ b: inout Endpoint, now: Instant
    ) throws -> [UInt8] {
        let id = try #require(a.connectionID(for: b.staticKey))
        _ = try a.send(Array("recorded".utf8), on: Self.channel, to: id)
        let datagrams = EndpointPair.drain(&a, now: now)
        try #require(datagrams.count == 1)
        EndpointPair.deliver(datagrams, to: &b, from: 1, now: now)
        #expect(ConnectionRestartTests.messages(&b) == [Array("recorded".utf8)])
        return datagrams[0]
    }

    @Test("A datagram replayed after a rekey, and again after its keys expired, is dropped and counted; nothing else")
    func replayAfterRekeyAndExpiry() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        let recorded = try Self.recordedMessage(&a, &b, now: .zero + .milliseconds(1))
        let connection = try #require(b.connectionID(for: a.staticKey))
        let handshakesBefore = try #require(b.connection(connection)).statistics.handshakes

        // Past the 120 s rekey: the recorded packet's keys are now the previous keypair's.
        ConnectionRestartTests.advance(&a, &b, from: .zero, to: .zero + .seconds(130))
        #expect(try #require(b.connection(connection)).statistics.handshakes > handshakesBefore, "a rekey happened")
        _ = EndpointPair.events(&b)
        let rejectedBefore = b.statistics.transportRejected + b.statistics.unknownIndexDropped
        b.handle(datagram: recorded, from: EndpointPair.address(1), now: .zero + .seconds(130))
        #expect(ConnectionRestartTests.messages(&b).isEmpty, "the replay delivers nothing")
        #expect(b.statistics.transportRejected + b.statistics.unknownIndexDropped == rejectedBefore + 1)
        #expect(b.connection(connection)?.state == .established)

        // Past 180 s, the old keys are gone: the replay does not even find a receiver index.
        ConnectionRestartTests.advance(&a, &b, from: .zero + .seconds(130), to: .zero + .seconds(190))
        _ = EndpointPair.events(&b)
        let unknownBefore = b.statistics.unknownIndexDropped
        b.handle(datagram: recorded, from: EndpointPair.address(1), now: .zero + .seconds(190))
        #expect(ConnectionRestartTests.messages(&b).isEmpty)
        #expect(b.statistics.unknownIndexDropped == unknownBefore + 1)
        #expect(b.connection(connection)?.state == .established)
        // Nothing is sent in answer to the replay (the exchange above left nothing pending at this instant).
        #expect(EndpointPair.drain(&b, now: .zero + .seconds(190)).isEmpty, "no reply to the replay")
    }

    @Test(
        "A datagram replayed into a restarted endpoint, which never issued its receiver index, is dropped and counted")
    func replayIntoRestartedEndpoint() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        let recorded = try Self.recordedMessage(&a, &b, now: .zero + .milliseconds(1))
        // b restarts: same identity, no state.
        var restarted = EndpointPair.endpoint(seed: 2)
        try restarted.addPeer(ConnectionRestartTests.credentials(for: a.staticKey))
        restarted.handle(datagram: recorded, from: EndpointPair.address(1), now: .zero + .seconds(1))
        #expect(restarted.statistics.unknownIndexDropped == 1)
        #expect(EndpointPair.events(&restarted).isEmpty, "no event, no connection")
        #expect(EndpointPair.drain(&restarted, now: .zero + .seconds(1)).isEmpty, "no reply")
    }
}
