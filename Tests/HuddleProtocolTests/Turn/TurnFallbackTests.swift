import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// An endpoint given a TURN server over UDP and the same over TCP, on a network that blocks UDP and later lets it
/// through: the TCP server stands by, takes over after 2 s of UDP silence, carries a connection, and stands by again
/// once UDP works, the connection moving to the UDP allocation. Scripted servers stand in for coturn (which
/// `TurnProcessTests` runs); the stream's answers reach the endpoint in 7-byte chunks, as TCP may cut them.
@Suite("TURN: the TCP fallback")
struct TurnFallbackTests {
    static let serverIP = NetworkAddress(ipv4: 192, 0, 2, 10, port: 3478)
    let udpServer = TurnServerAddress(serverIP, transport: .udp)
    let tcpServer = TurnServerAddress(NetworkAddress(ipv4: 192, 0, 2, 10, port: 443), transport: .tcp)
    let hostAddress = NetworkAddress(ipv4: 10, 0, 0, 1, port: 4000)
    let guestAddress = NetworkAddress(ipv4: 198, 51, 100, 50, port: 5000)

    /// The host (behind the firewall, with both servers), the guest (on the internet), the two relays and the state
    /// of the firewall and of the host's TCP connection.
    struct World {
        var host: Endpoint
        var guest: Endpoint
        var udpRelay = ScriptedTurnRelay(relayed: NetworkAddress(ipv4: 203, 0, 113, 7, port: 50_000))
        var tcpRelay = ScriptedTurnRelay(relayed: NetworkAddress(ipv4: 203, 0, 113, 7, port: 50_001))
        var udpBlocked = true
        var streamOpen = false
        var streamCommands: [TurnClient.StreamCommand] = []
        var hostEvents: [EndpointEvent] = []
        var guestEvents: [EndpointEvent] = []
        var framer = TurnStreamFramer()
    }

    func makeWorld() throws -> World {
        var host = EndpointPair.endpoint(seed: 1)
        var guest = EndpointPair.endpoint(seed: 2)
        try host.addPeer(EndpointPair.credentials(for: guest.staticKey))
        try guest.addPeer(EndpointPair.credentials(for: host.staticKey))
        let credentials = TurnCredentials(username: "ada", password: "secret")
        host.addTurnServer(TurnServer(address: udpServer.address, credentials: credentials), now: .zero)
        host.addTurnServer(
            TurnServer(address: tcpServer.address, transport: .tcp, credentials: credentials), now: .zero)
        return World(host: host, guest: guest)
    }

    /// Moves everything due at `now` once: timers, the host's datagrams (to the UDP server unless blocked; never
    /// straight to the guest, so the relays carry the session), its TCP commands and bytes, the guest's datagrams.
    func step(_ world: inout World, now: Instant) {
        if let due = world.host.nextDeadline, due <= now { world.host.handleTimeout(now: now) }
        if let due = world.guest.nextDeadline, due <= now { world.guest.handleTimeout(now: now) }
        var toGuest: [(NetworkAddress, [UInt8])] = []
        while let (destination, datagram) = world.host.pollTransmit(now: now) {
            guard destination == udpServer.address, !world.udpBlocked else { continue }
            let (answers, relayed) = world.udpRelay.fromClient(datagram)
            for answer in answers { deliver(answer, toHostFrom: udpServer.address, &world, now: now) }
            toGuest += relayed.map { (world.udpRelay.relayed, $0.1) }
        }
        while let (server, command) = world.host.pollTurnStreamCommand() {
            #expect(server == tcpServer)
            world.streamCommands.append(command)
            switch command {
            case .open:
                world.streamOpen = true
                world.host.turnStreamOpened(tcpServer, now: now)
            case .close:
                // What was queued before the close (the Refresh deleting the allocation) is written first.
                for frame in streamFrames(&world) { _ = world.tcpRelay.fromClient(frame) }
                world.streamOpen = false
                world.framer = TurnStreamFramer()
            }
        }
        if world.streamOpen {
            var answers: [UInt8] = []
            for frame in streamFrames(&world) {
                let (toClient, relayed) = world.tcpRelay.fromClient(frame)
                answers += toClient.flatMap { $0 }
                toGuest += relayed.map { (world.tcpRelay.relayed, $0.1) }
            }
            streamToHost(answers, &world, now: now)
        }
        for (source, datagram) in toGuest {
            var copy = datagram
            copy.withUnsafeMutableBytes { world.guest.handle(datagram: $0, from: source, now: now) }
        }
        while let (destination, datagram) = world.guest.pollTransmit(now: now) {
            if destination == world.udpRelay.relayed, !world.udpBlocked {
                deliver(
                    world.udpRelay.fromPeer(datagram, peer: guestAddress), toHostFrom: udpServer.address, &world,
                    now: now)
            } else if destination == world.tcpRelay.relayed, world.streamOpen {
                streamToHost(world.tcpRelay.fromPeer(datagram, peer: guestAddress).padded, &world, now: now)
            }
        }
        while let event = world.host.pollEvent() { world.hostEvents.append(event) }
        while let event = world.guest.pollEvent() { world.guestEvents.append(event) }
    }

    /// The messages the host has written to its TCP connection, cut by the server's framer.
    func streamFrames(_ world: inout World) -> [[UInt8]] {
        var stream: [UInt8] = []
        while let bytes = world.host.pollTurnStreamBytes(to: tcpServer) { stream += bytes }
        var frames: [[UInt8]] = []
        stream.withUnsafeMutableBytes { raw in
            try? world.framer.consume(raw) { frames.append(Array($0)) }
        }
        return frames
    }

    func deliver(_ datagram: [UInt8], toHostFrom source: NetworkAddress, _ world: inout World, now: Instant) {
        var copy = datagram
        copy.withUnsafeMutableBytes { world.host.handle(datagram: $0, from: source, now: now) }
    }

    /// Bytes down the TCP connection to the host, in 7-byte chunks.
    func streamToHost(_ bytes: [UInt8], _ world: inout World, now: Instant) {
        var offset = 0
        while offset < bytes.count {
            var chunk = Array(bytes[offset..<min(offset + 7, bytes.count)])
            chunk.withUnsafeMutableBytes { world.host.handleTurnStream($0, from: tcpServer, now: now) }
            offset += 7
        }
    }

    /// Steps every 10 ms from `start` until `done` or `limit`; returns the time reached.
    @discardableResult
    func run(
        _ world: inout World, from start: Instant, limit: Duration = .seconds(10), until done: (World) -> Bool
    ) -> Instant {
        var now = start
        while !done(world), now < start + limit {
            now = now + .milliseconds(10)
            step(&world, now: now)
        }
        return now
    }

    func messages(_ events: [EndpointEvent]) -> [String] {
        events.compactMap {
            if case .message(_, _, let bytes) = $0 { String(decoding: bytes, as: UTF8.self) } else { nil }
        }
    }

    @Test(
        "UDP blocked: the TCP server stands by for 2 s, then allocates, and a guest dialling its relayed address gets in"
    )
    func fallsBackToTCP() throws {
        var world = try makeWorld()
        #expect(world.host.turnAllocations.map(\.isStandingBy) == [false, true])
        var now = run(&world, from: .zero, limit: .milliseconds(1990)) { _ in false }
        #expect(world.streamCommands.isEmpty, "the TCP server waits while UDP may still answer")
        now = run(&world, from: now, limit: .milliseconds(100)) { $0.host.turnAllocations[1].relayed != nil }
        #expect(world.streamCommands == [.open])
        #expect(now <= .zero + ProtocolLimits.turnStreamFallbackDelay + .milliseconds(20))
        #expect(world.host.turnAllocations[1].relayed == world.tcpRelay.relayed)
        #expect(world.host.turnAllocations[0].relayed == nil)

        let id = try world.guest.connect(to: world.host.staticKey, at: world.tcpRelay.relayed, now: now)
        now = run(&world, from: now) { $0.guest.connection(id)?.state == .established }
        #expect(world.guest.connection(id)?.state == .established)
        let hostConnection = try #require(world.host.connectionIDs.first)
        #expect(world.host.connection(hostConnection)?.route == .turn(server: tcpServer, peer: guestAddress))
        _ = try world.guest.send(Array("over tcp".utf8), on: ChannelID(16), to: id)
        _ = try world.host.send(Array("back over tcp".utf8), on: ChannelID(16), to: hostConnection)
        run(&world, from: now) {
            messages($0.hostEvents) == ["over tcp"] && messages($0.guestEvents) == ["back over tcp"]
        }
        #expect(messages(world.hostEvents) == ["over tcp"])
        #expect(messages(world.guestEvents) == ["back over tcp"])
        #expect(world.host.statistics.turnPacketsDropped == 0)
        #expect(world.host.statistics.turnDatagramsDropped == 0)
    }

    @Test("UDP back: the connection moves from the TCP allocation to the UDP one, and the TCP server stands by again")
    func returnsToUDP() throws {
        var world = try makeWorld()
        var now = run(&world, from: .zero) { $0.host.turnAllocations[1].relayed != nil }
        let id = try world.guest.connect(to: world.host.staticKey, at: world.tcpRelay.relayed, now: now)
        now = run(&world, from: now) { $0.guest.connection(id)?.state == .established }
        let hostConnection = try #require(world.host.connectionIDs.first)

        // UDP opens: the UDP client's next retransmission of its Allocate gets through.
        world.udpBlocked = false
        now = run(&world, from: now, limit: .seconds(20)) { $0.host.turnAllocations[0].relayed != nil }
        #expect(world.host.turnAllocations[0].relayed == world.udpRelay.relayed)
        #expect(world.host.connection(hostConnection)?.route == .turn(server: udpServer, peer: guestAddress))
        #expect(world.host.turnAllocations[1].isStandingBy)
        #expect(world.streamCommands == [.open, .close])
        #expect(world.tcpRelay.answered.last == .refresh, "the TCP allocation was deleted before the close")

        // Both ways through the UDP allocation; the guest follows the host to its new relayed address.
        _ = try world.host.send(Array("over udp".utf8), on: ChannelID(16), to: hostConnection)
        run(&world, from: now) { messages($0.guestEvents) == ["over udp"] }
        #expect(messages(world.guestEvents) == ["over udp"])
        _ = try world.guest.send(Array("back over udp".utf8), on: ChannelID(16), to: id)
        run(&world, from: now) { messages($0.hostEvents) == ["back over udp"] }
        #expect(messages(world.hostEvents) == ["back over udp"])
        #expect(world.guest.connection(id)?.route == .direct(world.udpRelay.relayed))
    }

    @Test("A UDP allocation lost for good starts the TCP fallback at once, not 2 s later")
    func udpLostStartsFallback() throws {
        var world = try makeWorld()
        world.udpBlocked = false
        var now = run(&world, from: .zero) { $0.host.turnAllocations[0].relayed != nil }
        #expect(world.host.turnAllocations[1].isStandingBy)
        run(&world, from: now, limit: .seconds(5)) { _ in false }
        #expect(world.streamCommands.isEmpty, "UDP works: the fallback stays off")

        // UDP closes: the refresh a minute before the lifetime ends goes unanswered, and fails after its 7 sends.
        world.udpBlocked = true
        now = run(&world, from: now, limit: .seconds(700)) { $0.host.turnAllocations[0].failure != nil }
        #expect(world.host.turnAllocations[0].failure == .timedOut)
        let failedAt = now
        now = run(&world, from: now) { $0.host.turnAllocations[1].relayed != nil }
        #expect(world.host.turnAllocations[1].relayed == world.tcpRelay.relayed)
        #expect(now - failedAt < .milliseconds(100))
    }

    @Test(
        "Packets beyond maxTurnStreamQueuedBytes, waiting for a TCP connection that takes nothing, are dropped and counted"
    )
    func streamQueueLimit() throws {
        var world = try makeWorld()
        run(&world, from: .zero) { $0.host.turnAllocations[1].relayed != nil }
        let index = try #require(world.host.turnClients.firstIndex { $0.server == tcpServer })
        // 300 packets of 1,000 bytes into a socket that takes nothing (the test stops draining the stream).
        let dropsBefore = world.host.statistics.turnPacketsDropped
        for _ in 0..<300 { world.host.queueOnStream([UInt8](repeating: 0x40, count: 1_000), for: index) }
        var waiting = 0
        while let bytes = world.host.pollTurnStreamBytes(to: tcpServer) { waiting += bytes.count }
        #expect(waiting <= ProtocolLimits.maxTurnStreamQueuedBytes)
        #expect(waiting > ProtocolLimits.maxTurnStreamQueuedBytes - 1_000)
        #expect(world.host.statistics.turnPacketsDropped - dropsBefore == 300 - waiting / 1_000)
    }
}

extension Array where Element == UInt8 {
    /// Padded with zeros to a multiple of 4 bytes, as ChannelData is over a stream.
    fileprivate var padded: [UInt8] { self + [UInt8](repeating: 0, count: (4 - count % 4) % 4) }
}
