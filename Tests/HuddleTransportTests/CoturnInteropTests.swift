import HuddleCLITestSupport
import HuddleCrypto
import HuddleProtocol
import HuddleWire
import Testing

/// ``TurnClient`` against a real TURN server: Debian's coturn 4.6 on loopback, over UDP, with long-term
/// credentials. Everything a node needs from an allocation is exercised: the 401 round, the grant, a channel to a
/// peer, data both ways through the relay, a Send indication before the channel, and the server's refusal of a
/// peer that has no permission.
@Suite("TURN against coturn", .serialized)
struct CoturnInteropTests {
    /// Runs the client's exchange with the server until `done` holds or 5 s pass; returns the peer data it got.
    /// The test's time as the core takes it: since `start`.
    private func instant(since start: ContinuousClock.Instant) -> Instant {
        let elapsed = (ContinuousClock.now - start).components
        return Instant(nanoseconds: elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }

    private func exchange(
        _ client: inout TurnClient, over socket: LoopbackUDPSocket, server: UInt16, start: ContinuousClock.Instant,
        random: inout ChaChaRandomGenerator, atMost limit: Duration = .seconds(5),
        until done: (inout TurnClient) -> Bool = { _ in false }
    ) -> [(peer: NetworkAddress, payload: [UInt8])] {
        var delivered: [(peer: NetworkAddress, payload: [UInt8])] = []
        let deadline = ContinuousClock.now + limit
        while !done(&client), ContinuousClock.now < deadline {
            let now = instant(since: start)
            client.handleTimeout(now: now, using: &random)
            while let datagram = client.pollTransmit() { socket.send(datagram, to: server) }
            if var (bytes, _) = socket.receive(timeout: .milliseconds(50)) {
                if let data = bytes.withUnsafeMutableBytes({ client.handle($0, now: now, using: &random) }) {
                    delivered.append((data.peer, Array(bytes[data.payload])))
                }
            }
        }
        return delivered
    }

    @Test("Allocate with long-term credentials, then data both ways with a peer through a channel and by indication")
    func allocateAndRelay() throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn()
        defer { coturn.stop() }
        let socket = try LoopbackUDPSocket()
        let peer = try LoopbackUDPSocket()
        let peerAddress = NetworkAddress(ipv4: 127, 0, 0, 1, port: peer.port)
        var random = ChaChaRandomGenerator(seed: 38)
        let start = ContinuousClock.now
        var client = TurnClient(
            server: TurnServerAddress(NetworkAddress(ipv4: 127, 0, 0, 1, port: coturn.port), transport: .udp),
            credentials: TurnCredentials(username: Coturn.username, password: Coturn.password), now: .zero)

        _ = exchange(&client, over: socket, server: coturn.port, start: start, random: &random) {
            $0.relayedAddress != nil
        }
        let relayed = try #require(client.relayedAddress, "no allocation; coturn logged:\n\(coturn.log)")
        #expect(
            client.pollEvent()
                == .allocated(relayed: relayed, mapped: NetworkAddress(ipv4: 127, 0, 0, 1, port: socket.port)))

        // Before any permission the server drops what the peer sends to the relayed address.
        peer.send([1, 2, 3], to: relayed.port)
        #expect(
            exchange(&client, over: socket, server: coturn.port, start: start, random: &random, atMost: .seconds(1))
                .isEmpty)

        // A Send indication needs a permission too; a channel binding installs it.
        client.bindChannel(to: peerAddress, now: instant(since: start), using: &random)
        _ = exchange(&client, over: socket, server: coturn.port, start: start, random: &random) {
            $0.channel(for: peerAddress) != nil
        }
        let channel = try #require(client.channel(for: peerAddress), "no channel; coturn logged:\n\(coturn.log)")
        #expect(channel == 0x4000)

        // Out through the channel: the peer sees the bytes come from the relayed address.
        var framed = [UInt8](repeating: 0, count: 4) + Array("to the peer".utf8)
        framed.withUnsafeMutableBytes { ChannelData.writeHeader(channel: channel, length: 11, into: $0) }
        socket.send(framed, to: coturn.port)
        let atPeer = try #require(peer.receive(timeout: .seconds(2)))
        #expect(atPeer.bytes == Array("to the peer".utf8))
        #expect(atPeer.port == relayed.port)

        // Out by Send indication: the same.
        let indication = [UInt8]("by indication".utf8).withUnsafeBytes {
            client.sendIndication($0, to: peerAddress, using: &random)
        }
        socket.send(indication, to: coturn.port)
        #expect(peer.receive(timeout: .seconds(2))?.bytes == Array("by indication".utf8))

        // In from the peer: ChannelData naming the peer.
        peer.send(Array("to the client".utf8), to: relayed.port)
        let received = exchange(
            &client, over: socket, server: coturn.port, start: start, random: &random, atMost: .seconds(1))
        #expect(received.map { $0.peer } == [peerAddress])
        #expect(received.map { $0.payload } == [Array("to the client".utf8)])
    }

    @Test("A wrong password is a typed failure, unauthorized")
    func wrongPassword() throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn()
        defer { coturn.stop() }
        let socket = try LoopbackUDPSocket()
        var random = ChaChaRandomGenerator(seed: 39)
        let start = ContinuousClock.now
        var client = TurnClient(
            server: TurnServerAddress(NetworkAddress(ipv4: 127, 0, 0, 1, port: coturn.port), transport: .udp),
            credentials: TurnCredentials(username: Coturn.username, password: "wrong"), now: .zero)
        var event: TurnEvent?
        _ = exchange(&client, over: socket, server: coturn.port, start: start, random: &random) { client in
            event = event ?? client.pollEvent()
            return event != nil
        }
        #expect(event == .failed(.unauthorized))
        #expect(client.relayedAddress == nil)
    }
}
