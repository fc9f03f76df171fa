import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// The relay (docs/PROTOCOL.md 10): it registers only clients that prove their static key, forwards only between
/// registered clients, caps each client's rate, and answers strangers with a challenge smaller than their request.
@Suite("Relay server")
struct RelayServerTests {
    static let relayAddress = NetworkAddress(ipv4: 192, 0, 2, 1, port: 3478)
    static let clientAddress = [
        NetworkAddress(ipv4: 198, 51, 100, 7, port: 40_000), NetworkAddress(ipv4: 203, 0, 113, 9, port: 41_000),
    ]

    static func relay(_ configure: (inout RelayServerConfiguration) -> Void = { _ in }) -> RelayNode {
        RelayNode(seed: 77, configure: configure)
    }

    /// Runs registration between `endpoints` (at ``clientAddress``) and `relay` until quiet.
    static func register(_ endpoints: inout [Endpoint], with relay: inout RelayNode, now: Instant) {
        for index in endpoints.indices { endpoints[index].addRelay(relayAddress, now: now) }
        for _ in 0..<4 {
            for index in endpoints.indices {
                endpoints[index].handleTimeout(now: now)
                while let (destination, datagram) = endpoints[index].pollTransmit(now: now) {
                    #expect(destination == relayAddress)
                    relay.handle(datagram: datagram, from: clientAddress[index], now: now)
                }
            }
            while let transmit = relay.pollTransmit(now: now) {
                let index = clientAddress.firstIndex(of: transmit.destination)!
                endpoints[index].handle(datagram: transmit.datagram, from: relayAddress, now: now)
            }
        }
    }

    @Test("A client that proves its key is registered and learns the address the relay sees it at")
    func registration() throws {
        var endpoints = try TestMesh.endpoints(count: 2, seed: 5)
        var relay = Self.relay()
        Self.register(&endpoints, with: &relay, now: .zero)
        #expect(relay.relay.registrationCount == 2)
        for index in 0..<2 {
            #expect(endpoints[index].relays(now: .zero).first?.registered == true)
            #expect(endpoints[index].reflexiveAddresses == [Self.clientAddress[index]])
        }
    }

    @Test("A stranger's REGISTER draws only a challenge, smaller than the request, and no registration")
    func challengeIsSmaller() throws {
        var relay = Self.relay()
        let register = try RelayRegister(
            clientKey: [UInt8](repeating: 9, count: 32), token: [UInt8](repeating: 0, count: 16),
            mac: [UInt8](repeating: 0, count: 16)
        ).encoded()
        relay.handle(datagram: register, from: Self.clientAddress[0], now: .zero)
        let polled = relay.pollTransmit(now: .zero)
        let reply = try #require(polled)
        #expect(reply.datagram.count < register.count)
        #expect(relay.relay.registrationCount == 0)
        #expect(relay.relay.statistics.challengesSent == 1)
    }

    @Test("A client naming a key it does not hold is refused, and cannot send through the relay")
    func refusesUnauthenticatedClients() throws {
        var relay = Self.relay()
        let victim = try TestMesh.endpoints(count: 1, seed: 6)[0].staticKey
        // Get a genuine token for the victim's key at our address, then answer with a MAC we cannot compute.
        let zeros = [UInt8](repeating: 0, count: 16)
        let hello = try RelayRegister(clientKey: victim.bytes, token: zeros, mac: zeros).encoded()
        relay.handle(datagram: hello, from: Self.clientAddress[0], now: .zero)
        let reply = relay.pollTransmit(now: .zero)
        let challenge = try RelayChallenge(decoding: try #require(reply).datagram)
        let forged = try RelayRegister(
            clientKey: victim.bytes, token: challenge.token, mac: [UInt8](repeating: 0xAB, count: 16)
        ).encoded()
        relay.handle(datagram: forged, from: Self.clientAddress[0], now: .zero)
        #expect(relay.relay.statistics.registrationsRefused == 1)
        #expect(relay.relay.registrationCount == 0)
        #expect(relay.pollTransmit(now: .zero) == nil)
        // Not registered: the relay is not an open proxy for it.
        var envelope = [UInt8](repeating: 0, count: 200)
        envelope[0] = PacketType.relaySend.rawValue
        relay.handle(datagram: envelope, from: Self.clientAddress[0], now: .zero)
        #expect(relay.relay.statistics.unregisteredSourceDropped == 1)
        // Nothing is forwarded; the sender only hears a challenge (smaller than its packet) to register again.
        let answer = relay.pollTransmit(now: .zero)
        #expect(answer?.datagram.count == RelayChallenge.encodedLength)
        #expect(answer?.destination == Self.clientAddress[0])
        #expect(relay.pollTransmit(now: .zero) == nil)
    }

    @Test("A greedy client is capped at its rate plus the burst; packets to unknown keys are dropped")
    func capsGreedyClient() throws {
        var endpoints = try TestMesh.endpoints(count: 2, seed: 7)
        var relay = Self.relay {
            $0.bytesPerSecondPerClient = 100_000
            $0.burstBytesPerClient = 10_000
        }
        Self.register(&endpoints, with: &relay, now: .zero)
        // Client 0 sends 1,236-byte envelopes to client 1 as fast as it can for one second: 10 MB offered.
        var envelope = [UInt8](repeating: 0x5A, count: 1236)
        envelope[0] = PacketType.relaySend.rawValue
        envelope[1] = 0
        envelope[2] = 0
        envelope[3] = 0
        envelope.replaceSubrange(4..<36, with: endpoints[1].staticKey.bytes)
        var now = Instant.zero
        for _ in 0..<8_000 {
            relay.handle(datagram: envelope, from: Self.clientAddress[0], now: now)
            now = now + .microseconds(125)
        }
        var forwarded = 0
        while let transmit = relay.pollTransmit(now: now) {
            guard transmit.destination == Self.clientAddress[1] else { continue }
            #expect(transmit.datagram[0] == PacketType.relayDeliver.rawValue)
            #expect(Array(transmit.datagram[4..<36]) == endpoints[0].staticKey.bytes)
            forwarded += transmit.datagram.count
        }
        #expect(forwarded <= 100_000 + 10_000 + 1236)
        #expect(forwarded >= 90_000)
        #expect(relay.relay.statistics.rateLimitedDropped > 7_000)
        envelope.replaceSubrange(4..<36, with: [UInt8](repeating: 1, count: 32))
        relay.handle(datagram: envelope, from: Self.clientAddress[0], now: now + .seconds(1))
        #expect(relay.relay.statistics.unknownDestinationDropped == 1)
    }

    @Test("Registrations stop at the configured limit")
    func registrationLimit() throws {
        var endpoints = try TestMesh.endpoints(count: 2, seed: 8)
        var relay = Self.relay { $0.maxRegistrations = 1 }
        Self.register(&endpoints, with: &relay, now: .zero)
        #expect(relay.relay.registrationCount == 1)
        #expect(relay.relay.statistics.registrationsOverLimit >= 1)
    }
}
