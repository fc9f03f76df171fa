import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// Path validation and migration (docs/PROTOCOL.md 7.7): an authenticated packet from a new address moves the
/// connection only after the peer proves it receives there; until then the endpoint sends that address at most three
/// times what it received from it.
@Suite("Path validation and migration")
struct PathValidationTests {
    static let addressA = NetworkAddress(ipv4: 10, 0, 0, 1, port: 4000)
    static let addressB = NetworkAddress(ipv4: 10, 0, 0, 2, port: 4000)
    static let attacker = NetworkAddress(ipv4: 192, 0, 2, 66, port: 6666)
    static let channel = ChannelID(200)

    /// Two endpoints with an established connection, A at `addressA` and B at `addressB`.
    static func connected() throws -> (a: Endpoint, b: Endpoint, now: Instant) {
        let endpoints = try TestMesh.endpoints(count: 2, seed: 41)
        var a = endpoints[0]
        var b = endpoints[1]
        var now = Instant.zero
        try a.connect(to: b.staticKey, at: addressB, now: now)
        for _ in 0..<10 {
            shuttle(&a, &b, now: now)
            now = now + .milliseconds(1)
        }
        #expect(a.connectionIDs.count == 1 && b.connectionIDs.count == 1)
        return (a, b, now)
    }

    /// Delivers everything each side sends to the other (from its own address) until both are quiet.
    static func shuttle(_ a: inout Endpoint, _ b: inout Endpoint, now: Instant) {
        while true {
            var moved = false
            while let (_, datagram) = a.pollTransmit(now: now) {
                b.handle(datagram: datagram, from: addressA, now: now)
                moved = true
            }
            while let (_, datagram) = b.pollTransmit(now: now) {
                a.handle(datagram: datagram, from: addressB, now: now)
                moved = true
            }
            if !moved { return }
        }
    }

    @Test("A replayed packet from another address draws at most 3x its size there, and the path reverts")
    func amplificationLimitAndRevert() throws {
        var (a, b, now) = try Self.connected()
        let idB = try #require(b.connectionID(for: a.staticKey))
        // A sends one message; an on-path attacker races it to B from its own address.
        let idA = try #require(a.connectionID(for: b.staticKey))
        _ = try a.send([1, 2, 3], on: Self.channel, to: idA)
        let captured = try #require(a.pollTransmit(now: now)?.datagram)
        b.handle(datagram: captured, from: Self.attacker, now: now)
        #expect(b.connection(idB)?.route == .direct(Self.attacker))
        #expect(b.connection(idB)?.isRouteValidated == false)
        // B has a lot to send: 1 MiB queued for A.
        for _ in 0..<16 { _ = try b.send([UInt8](repeating: 7, count: 65_536), on: Self.channel, to: idB) }
        var sentToAttacker = 0
        for step in 0..<50 {
            while let (destination, datagram) = b.pollTransmit(now: now) {
                if destination == Self.attacker { sentToAttacker += datagram.count }
            }
            b.handleTimeout(now: now)
            now = now + .milliseconds(10 * step)
        }
        #expect(sentToAttacker <= 3 * captured.count, "sent \(sentToAttacker) bytes for \(captured.count) received")
        // Nobody answered the challenge: B went back to A's validated address.
        now = now + .seconds(10)
        b.handleTimeout(now: now)
        _ = b.pollTransmit(now: now)
        #expect(b.connection(idB)?.route == .direct(Self.addressA))
        #expect(b.connection(idB)?.statistics.pathValidationFailures == 1)
    }

    @Test("Probes of an address that never answers are counted apart: the connection's path lost no packet")
    func lostProbesAreNotPacketLoss() throws {
        var (a, b, now) = try Self.connected()
        let idA = try #require(a.connectionID(for: b.staticKey))
        let idB = try #require(b.connectionID(for: a.staticKey))
        // A packet of A's arrives at B from another address too: B challenges that address, which never answers.
        _ = try a.send([1, 2, 3], on: Self.channel, to: idA)
        let captured = try #require(a.pollTransmit(now: now)?.datagram)
        b.handle(datagram: captured, from: Self.attacker, now: now)
        b.handle(datagram: captured, from: Self.addressA, now: now)
        var probes = 0
        for _ in 0..<40 {
            b.handleTimeout(now: now)
            while let (destination, datagram) = b.pollTransmit(now: now) {
                if destination == Self.attacker {
                    probes += 1
                } else {
                    a.handle(datagram: datagram, from: Self.addressB, now: now)
                }
            }
            // Traffic on the real path, acknowledged, declares the unanswered probes lost.
            _ = try a.send([4], on: Self.channel, to: idA)
            _ = try b.send([5], on: Self.channel, to: idB)
            Self.shuttle(&a, &b, now: now)
            now = now + .milliseconds(50)
        }
        let statistics = try #require(b.connection(idB)?.statistics)
        #expect(probes > 0 && statistics.pathProbesLost > 0, "\(statistics)")
        #expect(statistics.packetsLost == 0, "\(statistics)")
    }

    @Test("The peer's next packet from its real address moves the connection straight back")
    func realAddressWinsBack() throws {
        var (a, b, now) = try Self.connected()
        let idA = try #require(a.connectionID(for: b.staticKey))
        let idB = try #require(b.connectionID(for: a.staticKey))
        _ = try a.send([1], on: Self.channel, to: idA)
        let first = try #require(a.pollTransmit(now: now)?.datagram)
        b.handle(datagram: first, from: Self.attacker, now: now)
        #expect(b.connection(idB)?.route == .direct(Self.attacker))
        now = now + .milliseconds(5)
        _ = try a.send([2], on: Self.channel, to: idA)
        let second = try #require(a.pollTransmit(now: now)?.datagram)
        b.handle(datagram: second, from: Self.addressA, now: now)
        // Already validated (the handshake completed there): no challenge, no limit.
        #expect(b.connection(idB)?.route == .direct(Self.addressA))
        #expect(b.connection(idB)?.isRouteValidated == true)
    }

    @Test("A NAT rebinding is followed once the peer answers the challenge, keeping congestion state")
    func rebindingValidates() throws {
        var (a, b, now) = try Self.connected()
        let idA = try #require(a.connectionID(for: b.staticKey))
        let idB = try #require(b.connectionID(for: a.staticKey))
        let rebound = NetworkAddress(ipv4: 10, 0, 0, 1, port: 4999)
        for _ in 0..<4 { _ = try a.send([UInt8](repeating: 1, count: 5000), on: Self.channel, to: idA) }
        // Everything from A now arrives from the new port; B's replies reach A wherever they go.
        for _ in 0..<20 {
            while let (_, datagram) = a.pollTransmit(now: now) { b.handle(datagram: datagram, from: rebound, now: now) }
            while let (_, datagram) = b.pollTransmit(now: now) {
                a.handle(datagram: datagram, from: Self.addressB, now: now)
            }
            now = now + .milliseconds(5)
            a.handleTimeout(now: now)
            b.handleTimeout(now: now)
        }
        let connection = try #require(b.connection(idB))
        #expect(connection.route == .direct(rebound))
        #expect(connection.isRouteValidated)
        #expect(connection.statistics.pathsValidated == 1)
        #expect(connection.statistics.migrations == 1)
    }

    @Test("An older packet from a new address (reordered, or replayed late) moves nothing")
    func olderPacketDoesNotMigrate() throws {
        var (a, b, now) = try Self.connected()
        let idA = try #require(a.connectionID(for: b.staticKey))
        let idB = try #require(b.connectionID(for: a.staticKey))
        _ = try a.send([1], on: Self.channel, to: idA)
        let older = try #require(a.pollTransmit(now: now)?.datagram)
        _ = try a.send([2], on: Self.channel, to: idA)
        let newer = try #require(a.pollTransmit(now: now)?.datagram)
        b.handle(datagram: newer, from: Self.addressA, now: now)
        b.handle(datagram: older, from: Self.attacker, now: now)
        #expect(b.connection(idB)?.route == .direct(Self.addressA))
        now = now + .milliseconds(1)
        var events: [EndpointEvent] = []
        while let event = b.pollEvent() { events.append(event) }
        #expect(!events.contains { if case .routeChanged = $0 { return true } else { return false } })
        #expect(events.filter { if case .message = $0 { return true } else { return false } }.count == 2)
    }
}
