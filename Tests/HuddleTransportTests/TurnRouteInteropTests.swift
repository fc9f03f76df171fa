import Foundation
import HuddleCLITestSupport
import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// Two endpoints on real UDP sockets, one of them known to the other only by its TURN relayed address on a real
/// coturn: the handshake and messages both ways go through the allocation, which the endpoint drives itself.
@Suite("Endpoints through coturn", .serialized)
struct TurnRouteInteropTests {
    /// An endpoint on its own loopback socket, pumped by hand: timers, transmits, receives.
    final class SocketEndpoint {
        var endpoint: Endpoint
        let socket: LoopbackUDPSocket
        var events: [EndpointEvent] = []

        init(_ endpoint: Endpoint) throws {
            self.endpoint = endpoint
            socket = try LoopbackUDPSocket()
        }

        var address: NetworkAddress { NetworkAddress(ipv4: 127, 0, 0, 1, port: socket.port) }

        func step(now: Instant) {
            if let deadline = endpoint.nextDeadline, deadline <= now { endpoint.handleTimeout(now: now) }
            while let (destination, datagram) = endpoint.pollTransmit(now: now) {
                socket.send(datagram, to: destination.port)
            }
            while let (bytes, port) = socket.receive(timeout: .milliseconds(2)) {
                endpoint.handle(datagram: bytes, from: NetworkAddress(ipv4: 127, 0, 0, 1, port: port), now: now)
            }
            while let event = endpoint.pollEvent() { events.append(event) }
        }
    }

    /// Steps both until `done` or 5 s.
    func run(_ a: SocketEndpoint, _ b: SocketEndpoint, start: ContinuousClock.Instant, until done: () -> Bool) {
        let deadline = ContinuousClock.now + .seconds(5)
        while !done(), ContinuousClock.now < deadline {
            let elapsed = (ContinuousClock.now - start).components
            let now = Instant(nanoseconds: elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
            a.step(now: now)
            b.step(now: now)
        }
    }

    @Test("A peer that knows this node only by its relayed address connects through coturn, and messages go both ways")
    func connectAtRelayedAddress() throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn()
        defer { coturn.stop() }
        let server = NetworkAddress(ipv4: 127, 0, 0, 1, port: coturn.port)
        var hostEndpoint = EndpointPair.endpoint(seed: 1)
        var guestEndpoint = EndpointPair.endpoint(seed: 2)
        try hostEndpoint.addPeer(EndpointPair.credentials(for: guestEndpoint.staticKey))
        try guestEndpoint.addPeer(EndpointPair.credentials(for: hostEndpoint.staticKey))
        hostEndpoint.addTurnServer(
            TurnServer(
                address: server, credentials: TurnCredentials(username: Coturn.username, password: Coturn.password)),
            now: .zero)
        let host = try SocketEndpoint(hostEndpoint)
        let guest = try SocketEndpoint(guestEndpoint)
        let start = ContinuousClock.now

        run(host, guest, start: start) { host.endpoint.turnAllocations.first?.relayed != nil }
        let relayed = try #require(host.endpoint.turnAllocations.first?.relayed, "no allocation:\n\(coturn.log)")
        #expect(relayed.port != host.socket.port)

        let id = try guest.endpoint.connect(to: host.endpoint.staticKey, at: relayed, now: .zero)
        run(host, guest, start: start) {
            host.events.contains { if case .connected = $0 { true } else { false } }
                && guest.events.contains { if case .connected = $0 { true } else { false } }
        }
        #expect(guest.endpoint.connection(id)?.state == .established, "coturn logged:\n\(coturn.log)")
        #expect(guest.endpoint.connection(id)?.route == .direct(relayed))
        let hostConnection = try #require(host.endpoint.connectionIDs.first)
        #expect(
            host.endpoint.connection(hostConnection)?.route
                == .turn(server: TurnServerAddress(server, transport: .udp), peer: guest.address))

        _ = try guest.endpoint.send(Array("to the host".utf8), on: ChannelID(16), to: id)
        _ = try host.endpoint.send(Array("to the guest".utf8), on: ChannelID(16), to: hostConnection)
        run(host, guest, start: start) {
            host.events.contains { if case .message = $0 { true } else { false } }
                && guest.events.contains { if case .message = $0 { true } else { false } }
        }
        let atHost = host.events.compactMap { if case .message(_, _, let bytes) = $0 { bytes } else { nil } }
        let atGuest = guest.events.compactMap { if case .message(_, _, let bytes) = $0 { bytes } else { nil } }
        #expect(atHost == [Array("to the host".utf8)])
        #expect(atGuest == [Array("to the guest".utf8)])
        #expect(host.endpoint.statistics.turnPacketsSent > 0)
        #expect(host.endpoint.statistics.turnPacketsReceived > 0)
        #expect(host.endpoint.statistics.turnPacketsDropped == 0)

        // The guest's own address answers the host's path challenge: both move to the direct path.
        run(host, guest, start: start) { host.endpoint.connection(hostConnection)?.route == .direct(guest.address) }
        #expect(host.endpoint.connection(hostConnection)?.route == .direct(guest.address))
        run(host, guest, start: start) { guest.endpoint.connection(id)?.route == .direct(host.address) }
        #expect(guest.endpoint.connection(id)?.route == .direct(host.address))
    }
}
