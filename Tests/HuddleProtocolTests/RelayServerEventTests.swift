import HuddleCrypto
import HuddleWire
import Testing

@testable import HuddleProtocol

/// The relay's registration events (``RelayServerEvent``): what `huddle relay` reports to its operator.
@Suite("Relay server events")
struct RelayServerEventTests {
    static let relayAddress = NetworkAddress(ipv4: 192, 0, 2, 1, port: 3478)

    static func address(_ index: Int) -> NetworkAddress {
        NetworkAddress(
            ipv4: 198, 51, UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index), port: 40_000)
    }

    static func identity(seed: UInt64) -> Identity {
        var random = ChaChaRandomGenerator(seed: seed)
        return Identity(using: &random)
    }

    /// Registers `identity` from `source` the way a node does: REGISTER, CHALLENGE, REGISTER with the token.
    static func register(
        _ identity: Identity, from source: NetworkAddress, at relay: inout RelayServer, now: Instant
    )
        throws
    {
        var client = RelayClient(address: relayAddress, now: .zero)
        let initial = client.registerIfDue(identity: identity, now: now)
        let first = try #require(initial)
        let challenge = try RelayChallenge(decoding: try reply(to: first, from: source, relay: &relay, now: now))
        let response = client.handleChallenge(challenge, identity: identity)
        let answer = try #require(response)
        let registered = try reply(to: answer, from: source, relay: &relay, now: now)
        #expect(registered.withUnsafeBytes { client.handleRegistered($0, now: now) })
    }

    static func reply(
        to datagram: [UInt8], from source: NetworkAddress, relay: inout RelayServer, now: Instant
    )
        throws -> [UInt8]
    {
        var bytes = datagram
        _ = bytes.withUnsafeMutableBytes { relay.handle(datagram: $0, from: source, now: now) }
        let transmit = relay.pollTransmit()
        return try #require(transmit).datagram
    }

    static func relay() -> RelayServer {
        var random = ChaChaRandomGenerator(seed: 91)
        return RelayServer(configuration: .init(identity: Identity(using: &random)), generator: &random)
    }

    static func events(of relay: inout RelayServer) -> [RelayServerEvent] {
        var events: [RelayServerEvent] = []
        while let event = relay.pollEvent() { events.append(event) }
        return events
    }

    @Test("A registration is reported once; refreshes are not; a move, a displacement and an expiry are")
    func lifecycle() throws {
        var relay = Self.relay()
        let ana = Self.identity(seed: 1)
        let ben = Self.identity(seed: 2)
        let anaKey = ana.agreementKey.publicKey
        let benKey = ben.agreementKey.publicKey
        try Self.register(ana, from: Self.address(1), at: &relay, now: .zero)
        #expect(Self.events(of: &relay) == [.registered(anaKey, address: Self.address(1))])

        try Self.register(ana, from: Self.address(1), at: &relay, now: .zero + .seconds(15))
        #expect(Self.events(of: &relay).isEmpty, "a refresh from the same address is not news")

        try Self.register(ana, from: Self.address(2), at: &relay, now: .zero + .seconds(20))
        #expect(Self.events(of: &relay) == [.registered(anaKey, address: Self.address(2))])

        try Self.register(ben, from: Self.address(2), at: &relay, now: .zero + .seconds(21))
        #expect(
            Self.events(of: &relay) == [
                .registered(benKey, address: Self.address(2)), .unregistered(anaKey, reason: .displaced),
            ])

        // Idle: only the timer notices that ben's registration lapsed.
        relay.handleTimeout(now: .zero + .seconds(21) + ProtocolLimits.relayServerRegistrationLifetime - .seconds(1))
        #expect(Self.events(of: &relay).isEmpty)
        relay.handleTimeout(now: .zero + .seconds(21) + ProtocolLimits.relayServerRegistrationLifetime)
        #expect(Self.events(of: &relay) == [.unregistered(benKey, reason: .expired)])
        #expect(relay.registrationCount == 0)
    }

    @Test("Unpolled events stop at relayServerEventQueueLimit: the oldest are dropped and counted")
    func eventQueueIsBounded() throws {
        var relay = Self.relay()
        let ana = Self.identity(seed: 3)
        let limit = ProtocolLimits.relayServerEventQueueLimit
        // Each move to a new address is one event; ten more than the queue holds.
        for index in 0..<(limit + 10) {
            try Self.register(ana, from: Self.address(index), at: &relay, now: .zero + .milliseconds(Int64(index)))
        }
        #expect(relay.statistics.eventsDropped == 10)
        let events = Self.events(of: &relay)
        #expect(events.count == limit)
        #expect(events.first == .registered(ana.agreementKey.publicKey, address: Self.address(10)))
        #expect(events.last == .registered(ana.agreementKey.publicKey, address: Self.address(limit + 9)))
    }
}
