import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// A member's endpoint relaying for its session's members (PROTOCOL.md section 10.3): the relay protocol on the
/// member's own socket, only for the keys it admits, within the per-member budget.
@Suite("Member relay service")
struct MemberRelayServiceTests {
    static let relayAddress = NetworkAddress(ipv4: 192, 0, 2, 1, port: 7000)
    static let clientAddress = [
        NetworkAddress(ipv4: 198, 51, 100, 7, port: 40_000), NetworkAddress(ipv4: 203, 0, 113, 9, port: 41_000),
    ]

    /// Runs registration of `clients` (at ``clientAddress``) with the member `relay` (at ``relayAddress``) until
    /// quiet.
    static func register(_ clients: inout [Endpoint], with relay: inout Endpoint, now: Instant) {
        for index in clients.indices { clients[index].addMemberRelay(relay.staticKey, at: relayAddress, now: now) }
        for _ in 0..<4 {
            for index in clients.indices {
                clients[index].handleTimeout(now: now)
                while let (destination, datagram) = clients[index].pollTransmit(now: now) {
                    guard destination == relayAddress else { continue }
                    relay.handle(datagram: datagram, from: clientAddress[index], now: now)
                }
            }
            while let (destination, datagram) = relay.pollTransmit(now: now) {
                guard let index = clientAddress.firstIndex(of: destination) else { continue }
                clients[index].handle(datagram: datagram, from: relayAddress, now: now)
            }
        }
    }

    /// Two clients (at ``clientAddress``) registered with a third endpoint relaying for both of them.
    static func registered(
        seed: UInt64, configuration: ConnectionConfiguration = ConnectionConfiguration()
    ) throws -> (clients: [Endpoint], relay: Endpoint) {
        var endpoints = try TestMesh.endpoints(count: 3, seed: seed, configuration: configuration)
        var relay = endpoints.removeLast()
        relay.serveAsRelay(for: Set(endpoints.map(\.staticKey)))
        register(&endpoints, with: &relay, now: .zero)
        return (endpoints, relay)
    }

    /// A RELAY_SEND of `length` bytes in all from client `index` to `peer`.
    static func relaySend(to peer: X25519PublicKey, length: Int) -> [UInt8] {
        var datagram = [UInt8](repeating: 0, count: length)
        datagram.withUnsafeMutableBytes { RelayEnvelope.writeHeader(.relaySend, key: peer.bytes, into: $0) }
        return datagram
    }

    @Test("Members it admits register; a key it does not admit draws nothing and is counted")
    func admitsOnlyMembers() throws {
        var endpoints = try TestMesh.endpoints(count: 3, seed: 21)
        var relay = endpoints.removeLast()
        relay.serveAsRelay(for: [endpoints[0].staticKey])
        Self.register(&endpoints, with: &relay, now: .zero)
        #expect(endpoints[0].memberRelays(now: .zero).first?.isRegistered == true)
        #expect(endpoints[0].reflexiveAddresses == [Self.clientAddress[0]])
        let stranger = endpoints[1].memberRelays(now: .zero).first
        #expect(stranger?.isRegistered == false)
        #expect(stranger.map { $0.unansweredRegistrations >= 1 } == true)
        #expect(relay.relayServiceRegistrations == 1)
        let statistics = try #require(relay.relayServiceStatistics)
        #expect(statistics.registrationsRefused >= 1)
        #expect(statistics.challengesSent == 1, "only the admitted member was challenged")
    }

    @Test("A member that is no longer admitted is unregistered at once and nothing reaches it")
    func narrowingEndsRegistrations() throws {
        var (endpoints, relay) = try Self.registered(seed: 22)
        #expect(relay.relayServiceRegistrations == 2)
        relay.serveAsRelay(for: [endpoints[0].staticKey])
        #expect(relay.relayServiceRegistrations == 1)
        relay.handle(
            datagram: Self.relaySend(to: endpoints[1].staticKey, length: 200), from: Self.clientAddress[0], now: .zero)
        #expect(relay.pollTransmit(now: .zero) == nil)
        #expect(relay.relayServiceStatistics?.unknownDestinationDropped == 1)
        relay.stopServingAsRelay()
        #expect(relay.relayServiceStatistics == nil)
        let dropped = relay.statistics.malformedDropped
        relay.handle(
            datagram: Self.relaySend(to: endpoints[1].staticKey, length: 200), from: Self.clientAddress[0], now: .zero)
        #expect(relay.statistics.malformedDropped == dropped + 1)
    }

    @Test("An endpoint that does not relay drops relay requests and counts them, answering nothing")
    func notRelayingDrops() throws {
        var endpoints = try TestMesh.endpoints(count: 2, seed: 23)
        let register = try RelayRegister(
            clientKey: endpoints[0].staticKey.bytes, token: [UInt8](repeating: 0, count: 16),
            mac: [UInt8](repeating: 0, count: 16)
        ).encoded()
        endpoints[1].handle(datagram: register, from: Self.clientAddress[0], now: .zero)
        #expect(endpoints[1].pollTransmit(now: .zero) == nil)
        #expect(endpoints[1].statistics.malformedDropped == 1)
    }

    @Test("A member forwards exactly its burst at once (memberRelayBurstBytes), then drops and counts the rest")
    func budgetAtTheLimit() throws {
        var (endpoints, relay) = try Self.registered(seed: 24)
        let length = 1024
        let fit = ProtocolLimits.memberRelayBurstBytes / length
        let destination = endpoints[1].staticKey
        var forwarded = 0
        for _ in 0..<(fit + 1) {
            relay.handle(
                datagram: Self.relaySend(to: destination, length: length), from: Self.clientAddress[0], now: .zero)
            while let (to, datagram) = relay.pollTransmit(now: .zero) {
                #expect(to == Self.clientAddress[1])
                #expect(datagram.count == length)
                #expect(datagram.first == PacketType.relayDeliver.rawValue)
                forwarded += 1
            }
        }
        #expect(forwarded == fit)
        #expect(relay.relayServiceStatistics?.rateLimitedDropped == 1)
        // The bucket refills at memberRelayBytesPerSecond: a second later the rate's worth fits again.
        let later = Instant.zero + .seconds(1)
        relay.handle(datagram: Self.relaySend(to: destination, length: length), from: Self.clientAddress[0], now: later)
        #expect(relay.pollTransmit(now: later) != nil)
    }

    @Test("A RELAY_SEND larger than the member's transmit buffer is dropped and counted, not forwarded")
    func oversizedIsDropped() throws {
        // A socket that cannot set the don't-fragment bit probes no larger datagrams: its transmit buffer holds the
        // base size behind a relay header, less than the 8,972 bytes a RELAY_SEND may have.
        var configuration = ConnectionConfiguration()
        configuration.maxProbedDatagramSize = configuration.maxDatagramSize
        var (endpoints, relay) = try Self.registered(seed: 27, configuration: configuration)
        let destination = endpoints[1].staticKey
        let dropped = relay.statistics.relayPacketsDropped
        relay.handle(
            datagram: Self.relaySend(to: destination, length: relay.transmitBufferSize + 1),
            from: Self.clientAddress[0],
            now: .zero)
        #expect(relay.pollTransmit(now: .zero) == nil)
        #expect(relay.statistics.relayPacketsDropped == dropped + 1)
        relay.handle(
            datagram: Self.relaySend(to: destination, length: relay.transmitBufferSize), from: Self.clientAddress[0],
            now: .zero)
        #expect(relay.pollTransmit(now: .zero)?.datagram.count == relay.transmitBufferSize)
    }

    @Test("At most maxMemberRelays members, counted apart from dedicated relays; none relays to itself")
    func memberRelayLimit() throws {
        var endpoints = try TestMesh.endpoints(count: 1, seed: 25)
        var endpoint = endpoints.removeFirst()
        for index in 0..<ProtocolLimits.maxRelays {
            endpoint.addRelay(NetworkAddress(ipv4: 192, 0, 2, UInt8(10 + index), port: 3478), now: .zero)
        }
        var random = ChaChaRandomGenerator(seed: 26)
        let members = (0...ProtocolLimits.maxMemberRelays).map { _ in Identity(using: &random).agreementKey.publicKey }
        for (index, member) in members.enumerated() {
            endpoint.addMemberRelay(
                member, at: NetworkAddress(ipv4: 198, 51, 100, UInt8(index + 1), port: 7000), now: .zero)
        }
        #expect(
            endpoint.memberRelays(now: .zero).map(\.member) == Array(members.prefix(ProtocolLimits.maxMemberRelays)))
        #expect(endpoint.relays(now: .zero).count == ProtocolLimits.maxRelays)
        // Registering again at another address moves the registration.
        let moved = NetworkAddress(ipv4: 198, 51, 100, 99, port: 7001)
        endpoint.addMemberRelay(members[0], at: moved, now: .zero)
        #expect(endpoint.memberRelays(now: .zero).first { $0.member == members[0] }?.address == moved)
        endpoint.removeMemberRelay(members[0])
        #expect(!endpoint.memberRelays(now: .zero).contains { $0.member == members[0] })
        #expect(endpoint.memberRelay(on: .relayed(via: moved, peer: members[1])) == nil)
    }
}
