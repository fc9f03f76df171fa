import HuddleCrypto
import HuddleWire
import Testing

@testable import HuddleProtocol

/// `relay.json`: the relay protocol of PROTOCOL.md section 10, run through Swift's own relay client and server:
/// `RelayClient` writes the REGISTER messages (Alice's identity), `RelayServer` (the vector's relay key and token
/// secret, its clock at the vector's time) answers with the CHALLENGE and REGISTERED messages and rewrites a
/// RELAY_SEND into a RELAY_DELIVER. Every message is also decoded with the `HuddleWire` layout types and re-encoded.
/// The relay key K is private to `RelayAuthenticator`; it is checked through the MACs Swift computes with it.
@Suite("Vectors: relay.json")
struct RelayVectorTests {
    static let file = "relay"

    @Test("Every case of relay.json is checked (9 cases)")
    func coverage() throws {
        let named: (String) -> CaseFilter = { name in { (try? $0.string("name")) == name } }
        try expectCoverage(
            of: Self.file, count: 9,
            groups: [
                "relay_key", "token", "register_initial", "challenge", "register", "registered_v4", "registered_v6",
                "send", "deliver",
            ].map { ($0, named($0)) })
    }

    @Test("The relay key: X25519 both ways, then keyed BLAKE2b (checked through RelayAuthenticator's MACs)")
    func relayKey() throws {
        let vector = try VectorFile.load(Self.file)("relay_key")
        let client = try X25519PrivateKey(secretBytes: try vector.bytes("client_static_private"))
        let relay = try X25519PrivateKey(secretBytes: try vector.bytes("relay_static_private"))
        #expect(try hexString(client.publicKey.bytes) == vector.string("client_static_key"))
        #expect(try hexString(relay.publicKey.bytes) == vector.string("relay_static_key"))
        #expect(try hexString(client.sharedSecret(with: relay.publicKey).bytes) == vector.string("shared_secret"))
        #expect(try hexString(relay.sharedSecret(with: client.publicKey).bytes) == vector.string("shared_secret"))
        let key = try vector.bytes("key")
        let probe = Array("any bytes".utf8)
        let expected = try BLAKE2b.hash(probe, outputLength: 16, key: key)
        #expect(try RelayAuthenticator(local: client, remote: relay.publicKey).mac(probe) == expected)
        #expect(try RelayAuthenticator(local: relay, remote: client.publicKey).mac(probe) == expected)
    }

    @Test("Registration: REGISTER, CHALLENGE (token), REGISTER with MAC, REGISTERED for IPv4 and IPv6")
    func registration() throws {
        let file = try VectorFile.load(Self.file)
        let world = try RelayWorld()
        var server = world.server
        let alice = try world.identity("alice")
        var client = RelayClient(address: world.relayAddress, now: .zero)

        // REGISTER with zero token and MAC.
        let initial = try file("register_initial")
        let initialRegister = client.registerIfDue(identity: alice, now: world.now)
        let first = try #require(initialRegister)
        #expect(try hexString(first) == initial.string("encoded"))
        try expectRegisterFields(
            first, initial, token: [UInt8](repeating: 0, count: 16), mac: [UInt8](repeating: 0, count: 16))

        // The relay answers from its token secret and clock with a CHALLENGE.
        let tokenCase = try file("token")
        let source = try networkAddress(try tokenCase.value("address"))
        let challengeCase = try file("challenge")
        let challengeBytes = try world.reply(to: first, from: source, server: &server)
        #expect(try hexString(challengeBytes) == challengeCase.string("encoded"))
        let challenge = try RelayChallenge(decoding: challengeBytes)
        #expect(try hexString(challenge.relayKey) == challengeCase.string("relay_static_key"))
        #expect(try hexString(challenge.token) == tokenCase.string("token"))
        #expect(try hexString(challenge.token) == challengeCase.string("token"))
        #expect(
            try RelayChallenge(relayKey: challengeCase.bytes("relay_static_key"), token: challengeCase.bytes("token"))
                .encoded() == challengeBytes)
        // The token's input: canonical address, then the window (clock / 60 s) little-endian.
        let window = try tokenCase.uint64("clock_seconds") / UInt64(ProtocolLimits.relayTokenWindow.components.seconds)
        #expect(try window == tokenCase.uint64("window"))
        #expect(try hexString(source.canonicalBytes + littleEndianBytes(window)) == tokenCase.string("input"))
        #expect(
            try BLAKE2b.hash(tokenCase.bytes("input"), outputLength: 16, key: tokenCase.bytes("relay_secret"))
                == challenge.token)

        // The client answers with the token and a MAC under K.
        let registerCase = try file("register")
        let answer = client.handleChallenge(challenge, identity: alice)
        let register = try #require(answer)
        #expect(try hexString(register) == registerCase.string("encoded"))
        let mac = try BLAKE2b.hash(
            register.prefix(RelayRegister.macOffset), outputLength: 16, key: registerCase.bytes("key"))
        try expectRegisterFields(register, registerCase, token: try registerCase.bytes("token"), mac: mac)

        // The relay confirms with the observed address, and the client accepts it.
        let registeredCase = try file("registered_v4")
        let registered = try world.reply(to: register, from: source, server: &server)
        #expect(try hexString(registered) == registeredCase.string("encoded"))
        try expectRegistered(registered, registeredCase)
        #expect(registered.withUnsafeBytes { client.handleRegistered($0, now: world.now) })
        #expect(client.observed == source)
        #expect(server.registrationCount == 1)

        // The same client registering from an IPv6 address.
        let v6Case = try file("registered_v6")
        let v6Source = try networkAddress(try v6Case.value("address"))
        let v6Challenge = try RelayChallenge(decoding: try world.reply(to: first, from: v6Source, server: &server))
        let v6Answer = client.handleChallenge(v6Challenge, identity: alice)
        let v6Register = try #require(v6Answer)
        let v6Registered = try world.reply(to: v6Register, from: v6Source, server: &server)
        #expect(try hexString(v6Registered) == v6Case.string("encoded"))
        try expectRegistered(v6Registered, v6Case)
        #expect(v6Registered.withUnsafeBytes { client.handleRegistered($0, now: world.now) })
        #expect(client.observed == v6Source)
    }

    @Test("RELAY_SEND as the endpoint writes it, and the RELAY_DELIVER the relay makes of it")
    func sendAndDeliver() throws {
        let file = try VectorFile.load(Self.file)
        let sendCase = try file("send")
        let deliverCase = try file("deliver")
        let inner = try sendCase.bytes("inner_packet")
        #expect(try hexString(inner) == VectorFile.load("handshake")("member_handshake").string("initiation"))
        #expect(try deliverCase.bytes("inner_packet") == inner)

        // The envelope as Endpoint writes it: RelayEnvelope's header, then the packet.
        var send = [UInt8](repeating: 0, count: RelayEnvelope.headerLength) + inner
        let destination = try sendCase.bytes("destination_static_key")
        send.withUnsafeMutableBytes { RelayEnvelope.writeHeader(.relaySend, key: destination, into: $0) }
        #expect(try hexString(send) == sendCase.string("encoded"))
        #expect(try PacketClassifier.classify(send) == .relaySend)
        #expect(send.withUnsafeBytes { RelayEnvelope.key(of: $0) } == destination)

        // Alice and Bob register; the relay forwards Alice's RELAY_SEND to Bob as a RELAY_DELIVER.
        let world = try RelayWorld()
        var server = world.server
        let aliceAddress = try networkAddress(try file("token").value("address"))
        let bobAddress = NetworkAddress(ipv4: 198, 51, 100, 2, port: 40002)
        try world.register(try world.identity("alice"), from: aliceAddress, server: &server)
        try world.register(try world.identity("bob"), from: bobAddress, server: &server)
        #expect(server.registrationCount == 2)
        var datagram = try sendCase.bytes("encoded")
        let forwardedTo = datagram.withUnsafeMutableBytes {
            server.handle(datagram: $0, from: aliceAddress, now: world.now)
        }
        #expect(forwardedTo == bobAddress)
        #expect(try hexString(datagram) == deliverCase.string("encoded"))
        #expect(try PacketClassifier.classify(datagram) == .relayDeliver)
        #expect(try datagram.withUnsafeBytes { RelayEnvelope.key(of: $0) } == deliverCase.bytes("source_static_key"))
    }

    /// A REGISTER's fields, decoded and re-encoded.
    func expectRegisterFields(
        _ bytes: [UInt8], _ vector: JSON, token: [UInt8], mac: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let register = try RelayRegister(decoding: bytes)
        #expect(try hexString(register.clientKey) == vector.string("client_static_key"), sourceLocation: sourceLocation)
        #expect(register.token == token, sourceLocation: sourceLocation)
        #expect(register.mac == mac, sourceLocation: sourceLocation)
        #expect(
            try RelayRegister(clientKey: register.clientKey, token: token, mac: mac).encoded() == bytes,
            sourceLocation: sourceLocation)
    }

    /// A REGISTERED's fields: the observed address and a MAC under the vector's K over bytes 0..<23.
    func expectRegistered(_ bytes: [UInt8], _ vector: JSON, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let registered = try RelayRegistered(decoding: bytes)
        #expect(try addressJSON(registered.observed) == vector.value("address"), sourceLocation: sourceLocation)
        let mac = try BLAKE2b.hash(bytes.prefix(RelayRegistered.macOffset), outputLength: 16, key: vector.bytes("key"))
        #expect(registered.mac == mac, sourceLocation: sourceLocation)
        #expect(
            try RelayRegistered(observed: registered.observed, mac: mac).encoded() == bytes,
            sourceLocation: sourceLocation)
    }
}

/// A relay server with the vector's keys and secret, at the vector's time.
struct RelayWorld {
    let server: RelayServer
    let now: Instant
    let relayAddress = NetworkAddress(ipv4: 203, 0, 113, 9, port: 3478)

    init() throws {
        let file = try VectorFile.load("relay")
        let key = try file("relay_key")
        let token = try file("token")
        let relayIdentity = Identity(
            signingKey: try Ed25519PrivateKey(seedBytes: [UInt8](repeating: 7, count: 32)),
            agreementKey: try X25519PrivateKey(secretBytes: try key.bytes("relay_static_private")))
        var random = FixedBytes(try token.bytes("relay_secret"))
        server = RelayServer(configuration: .init(identity: relayIdentity), generator: &random)
        #expect(!random.overdrawn && random.isEmpty, "the relay drew other randomness than its token secret")
        now = Instant(nanoseconds: Int64(try token.uint64("clock_seconds")) * 1_000_000_000)
    }

    /// A member's identity: its signing seed from kdf.json, its static key from handshake.json.
    func identity(_ name: String) throws -> Identity {
        let kdf = try VectorFile.load("kdf")("identity_\(name)")
        return Identity(
            signingKey: try Ed25519PrivateKey(seedBytes: try kdf.bytes("signing_seed")),
            agreementKey: try X25519PrivateKey(secretBytes: try kdf.bytes("static_private")))
    }

    /// The one datagram the relay sends back for `datagram` from `source`.
    func reply(to datagram: [UInt8], from source: NetworkAddress, server: inout RelayServer) throws -> [UInt8] {
        var bytes = datagram
        let forwarded = bytes.withUnsafeMutableBytes { server.handle(datagram: $0, from: source, now: now) }
        #expect(forwarded == nil)
        let first = server.pollTransmit()
        let second = server.pollTransmit()
        let reply = try #require(first)
        #expect(reply.destination == source)
        #expect(second == nil)
        return reply.datagram
    }

    /// Registers `identity` from `source` through a `RelayClient`.
    func register(_ identity: Identity, from source: NetworkAddress, server: inout RelayServer) throws {
        var client = RelayClient(address: relayAddress, now: .zero)
        let initial = client.registerIfDue(identity: identity, now: now)
        let first = try #require(initial)
        let challenge = try RelayChallenge(decoding: try reply(to: first, from: source, server: &server))
        let answer = client.handleChallenge(challenge, identity: identity)
        let register = try #require(answer)
        let registered = try reply(to: register, from: source, server: &server)
        #expect(registered.withUnsafeBytes { client.handleRegistered($0, now: now) })
    }
}
