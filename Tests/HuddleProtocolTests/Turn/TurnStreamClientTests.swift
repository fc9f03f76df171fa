import HuddleCrypto
import HuddleWire
import Testing

@testable import HuddleProtocol

@Suite("TURN client over TCP")
struct TurnStreamClientTests {
    let server = TurnServerAddress(NetworkAddress(ipv4: 192, 0, 2, 10, port: 443), transport: .tcp)

    func client(standingBy: Bool = false) -> TurnClient {
        TurnClient(
            server: server, credentials: TurnCredentials(username: "ada", password: "secret"), standingBy: standingBy,
            now: .zero)
    }

    /// `client` taken from an open connection through the 401 to an allocation at `now`.
    func allocate(
        _ client: inout TurnClient, _ turn: ScriptedTurnServer = ScriptedTurnServer(), now: Instant,
        random: inout ChaChaRandomGenerator
    ) throws {
        client.handleTimeout(now: now, using: &random)
        #expect(client.pollStreamCommand() == .open)
        client.streamOpened(now: now, using: &random)
        let first = try turn.read(try #require(client.drain().first)).message
        _ = client.receive(turn.challenge(first), now: now, random: &random)
        let second = try turn.read(try #require(client.drain().first)).message
        _ = client.receive(turn.allocated(second), now: now, random: &random)
        #expect(client.pollEvent() == .allocated(relayed: turn.relayed, mapped: turn.mapped))
    }

    @Test("Nothing goes before the connection opens; then the Allocate goes once, is never resent, and fails at 39.5 s")
    func connectionFirst() throws {
        var random = ChaChaRandomGenerator(seed: 1)
        var client = client()
        client.handleTimeout(now: .zero, using: &random)
        #expect(client.pollStreamCommand() == .open)
        #expect(client.pollStreamCommand() == nil)
        #expect(client.drain().isEmpty)
        #expect(client.nextDeadline == .distantFuture, "waits for the owner to report the connection")

        let opened = Instant.zero + .milliseconds(10)
        client.streamOpened(now: opened, using: &random)
        let allocate = try StunMessage(decoding: try #require(client.drain().first))
        #expect(allocate.method == .allocate)
        for later in [Duration.milliseconds(500), .milliseconds(1500), .seconds(10), .seconds(39)] {
            client.handleTimeout(now: opened + later, using: &random)
            #expect(client.drain().allSatisfy { (try? StunMessage(decoding: $0))?.method != .allocate })
        }
        #expect(client.nextDeadline == opened + ProtocolLimits.turnStreamRequestTimeout)
        client.handleTimeout(now: client.nextDeadline, using: &random)
        #expect(client.pollEvent() == .failed(.timedOut))
        #expect(client.lastFailure == .timedOut)
        // Tried again over the same connection 30 s on, without reconnecting.
        let failedAt = opened + ProtocolLimits.turnStreamRequestTimeout
        client.handleTimeout(now: failedAt + ProtocolLimits.turnRetryAfterFailure, using: &random)
        #expect(client.pollStreamCommand() == nil)
        #expect(client.drain().contains { (try? StunMessage(decoding: $0))?.method == .allocate })
    }

    @Test(
        "The allocation ends with its connection (connectionClosed); a connection that never opened is connectionFailed"
    )
    func connectionLost() throws {
        var random = ChaChaRandomGenerator(seed: 2)
        var client = client()
        try allocate(&client, now: .zero, random: &random)
        #expect(client.relayedAddress != nil)

        let lost = Instant.zero + .seconds(5)
        client.streamClosed(now: lost)
        #expect(client.pollEvent() == .failed(.connectionClosed))
        #expect(client.relayedAddress == nil)
        #expect(client.nextDeadline == lost + ProtocolLimits.turnRetryAfterFailure)
        client.handleTimeout(now: client.nextDeadline, using: &random)
        #expect(client.pollStreamCommand() == .open)
        client.streamClosed(now: lost + .seconds(31))
        #expect(client.pollEvent() == .failed(.connectionFailed))
        #expect(client.lastFailure == .connectionFailed)
    }

    @Test(
        "Standing by it connects to nothing; activated it allocates; standing by again deletes the allocation, closes")
    func standingBy() throws {
        var random = ChaChaRandomGenerator(seed: 3)
        let turn = ScriptedTurnServer()
        var client = client(standingBy: true)
        #expect(client.isStandingBy)
        for now in [Instant.zero, .zero + .seconds(10)] {
            client.handleTimeout(now: now, using: &random)
            #expect(client.pollStreamCommand() == nil)
            #expect(client.drain().isEmpty)
        }
        #expect(client.nextDeadline == .distantFuture)

        let activated = Instant.zero + .seconds(12)
        client.activate(now: activated)
        #expect(!client.isStandingBy)
        try allocate(&client, turn, now: activated, random: &random)
        client.permit(NetworkAddress(ipv4: 192, 0, 2, 99, port: 1), now: activated, using: &random)
        _ = client.drain()

        client.standBy(now: activated + .seconds(1), using: &random)
        let refresh = try StunMessage(decoding: try #require(client.drain().first))
        #expect(refresh.method == .refresh)
        #expect(try refresh.attribute(StunAttribute.lifetime)?.uint32() == 0)
        #expect(client.pollStreamCommand() == .close)
        #expect(client.isStandingBy && client.relayedAddress == nil)
        #expect(client.nextDeadline == .distantFuture)
        // A close the owner reports afterwards changes nothing: standing by is not a failure.
        client.streamClosed(now: activated + .seconds(2))
        #expect(client.pollEvent() == nil && client.lastFailure == nil)

        // Activated again, the permission asked before is asked again with the new allocation.
        client.activate(now: activated + .seconds(20))
        client.handleTimeout(now: activated + .seconds(20), using: &random)
        #expect(client.pollStreamCommand() == .open)
        client.streamOpened(now: activated + .seconds(20), using: &random)
        let allocateAgain = try turn.read(try #require(client.drain().first)).message
        #expect(allocateAgain.method == .allocate)
        _ = client.receive(turn.allocated(allocateAgain), now: activated + .seconds(20), random: &random)
        #expect(client.drain().contains { (try? StunMessage(decoding: $0))?.method == .createPermission })
    }

    @Test("Peers' packets queue up to maxTurnStreamQueuedBytes (256 KiB) and are refused beyond, or with no connection")
    func queueLimit() throws {
        var random = ChaChaRandomGenerator(seed: 4)
        var client = client()
        try allocate(&client, now: .zero, random: &random)
        _ = client.drain()
        let packet = [UInt8](repeating: 0x40, count: 1_000)
        var queued = 0
        while client.queueStreamData(packet) { queued += packet.count }
        #expect(queued <= ProtocolLimits.maxTurnStreamQueuedBytes)
        #expect(queued > ProtocolLimits.maxTurnStreamQueuedBytes - packet.count)
        // Draining makes room again.
        #expect(client.pollTransmit() == packet)
        let roomAgain = client.queueStreamData(packet)
        #expect(roomAgain)
        client.streamClosed(now: .zero + .seconds(1))
        #expect(client.pollTransmit() == nil, "what waited for a closed connection is gone with it")
        let queuedWhileClosed = client.queueStreamData(packet)
        #expect(!queuedWhileClosed)
    }
}
