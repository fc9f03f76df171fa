import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

@Suite("STUN Binding client")
struct StunBindingClientTests {
    let server = NetworkAddress(ipv4: 192, 0, 2, 10, port: 3478)
    let mapped = NetworkAddress(ipv4: 198, 51, 100, 2, port: 40_000)

    func answer(_ request: [UInt8], transactionID: [UInt8]? = nil) throws -> [UInt8] {
        let message = try StunMessage(decoding: request)
        let id = transactionID ?? message.transactionID
        return StunMessage(
            method: .binding, messageClass: .success, transactionID: id,
            attributes: [.xorAddress(StunAttribute.xorMappedAddress, mapped.wireAddress, transactionID: id)]
        ).encoded(fingerprint: true)
    }

    @Test("A Binding request goes at once, again at 0.5 and 1.5 s, then waits for the 25 s refresh")
    func retransmission() throws {
        var random = ChaChaRandomGenerator(seed: 1)
        var client = StunBindingClient(server: server, now: .zero)
        var sent: [(Instant, [UInt8])] = []
        var now = Instant.zero
        for _ in 0..<10 where now < .zero + .seconds(30) {
            client.handleTimeout(now: now, using: &random)
            while let datagram = client.pollTransmit() { sent.append((now, datagram)) }
            now = client.nextDeadline
        }
        #expect(sent.prefix(4).map { $0.0 - .zero } == [.zero, .milliseconds(500), .milliseconds(1500), .seconds(25)])
        let first = try StunMessage(decoding: sent[0].1)
        #expect(first.method == .binding && first.messageClass == .request)
        #expect(sent[1].1 == sent[0].1 && sent[2].1 == sent[0].1, "a retransmission is the same request")
        #expect(try StunMessage(decoding: sent[3].1).transactionID != first.transactionID)
    }

    @Test("The answer to the request in flight gives the mapped address; any other is dropped and counted")
    func answers() throws {
        var random = ChaChaRandomGenerator(seed: 2)
        var client = StunBindingClient(server: server, now: .zero)
        client.handleTimeout(now: .zero, using: &random)
        let polled = client.pollTransmit()
        let request = try #require(polled)
        let forged = try answer(request, transactionID: [UInt8](repeating: 9, count: 12))
        #expect(forged.withUnsafeBytes { client.handle($0) } == nil)
        #expect(client.datagramsDropped == 1 && client.mappedAddress == nil)
        #expect(try answer(request).withUnsafeBytes { client.handle($0) } == mapped)
        #expect(client.mappedAddress == mapped)
        // Answered: no retransmission; the next request at the refresh.
        #expect(client.nextDeadline == Instant.zero + ProtocolLimits.stunRefreshInterval)
        // A late duplicate of the answer matches nothing in flight.
        #expect(try answer(request).withUnsafeBytes { client.handle($0) } == nil)
        #expect(client.datagramsDropped == 2)
    }

    @Test("An endpoint asks each STUN server once, none that is also its UDP TURN server; the answer is reflexive")
    func endpointAsks() throws {
        var random = ChaChaRandomGenerator(seed: 99)
        var configuration = EndpointConfiguration(
            identity: Identity(using: &random), prologue: [], wallClockAtOrigin: TAI64N(seconds: 0, nanoseconds: 0))
        let other = NetworkAddress(ipv4: 192, 0, 2, 20, port: 3478)
        configuration.stunServers = [server, other, other]
        configuration.turnServers = [
            TurnServer(address: other, credentials: TurnCredentials(username: "ada", password: "secret"))
        ]
        var endpoint = Endpoint(configuration: configuration, generator: ChaChaRandomGenerator(seed: 3))
        #expect(endpoint.stunAnswers.map(\.server) == [server])
        endpoint.handleTimeout(now: .zero)
        var request: [UInt8]?
        while let (destination, datagram) = endpoint.pollTransmit(now: .zero) {
            if destination == server { request = datagram }
        }
        var reply = try answer(try #require(request))
        reply.withUnsafeMutableBytes { endpoint.handle(datagram: $0, from: server, now: .zero + .milliseconds(5)) }
        #expect(endpoint.stunAnswers.first?.mapped == mapped)
        #expect(endpoint.reflexiveAddresses == [mapped])
    }
}
