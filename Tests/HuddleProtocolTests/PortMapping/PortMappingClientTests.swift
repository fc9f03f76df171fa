import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// The PCP / NAT-PMP client against a gateway played here byte for byte: what it sends when, what it accepts, how
/// it falls back, renews, fails and releases. (Against a real router: `PortMappingNamespaceTests`, miniupnpd.)
@Suite("Port mapping client")
struct PortMappingClientTests {
    let gateway = NetworkAddress(ipv4: 192, 168, 1, 1, port: 5351)
    let local = NetworkAddress(ipv4: 192, 168, 1, 20, port: 7000)
    let external = NetworkAddress(ipv4: 198, 51, 100, 7, port: 7000)
    let nonce: [UInt8] = Array(1...12)

    func client() -> PortMappingClient {
        PortMappingClient(gateway: gateway.withPort(0), localAddress: local, nonce: nonce, now: .zero)
    }

    /// Runs timers from `start` until `until`, collecting what the client sends and when.
    func drive(_ client: inout PortMappingClient, from start: Instant, until end: Instant) -> [(Instant, [UInt8])] {
        var sent: [(Instant, [UInt8])] = []
        var now = start
        while let deadline = client.nextDeadline, deadline <= end {
            now = max(now, deadline)
            client.handleTimeout(now: now)
            while let datagram = client.pollTransmit() { sent.append((now, datagram)) }
        }
        return sent
    }

    /// Hands `bytes` from the gateway to `client` at `now`; whether its mapping changed.
    func feed(_ bytes: [UInt8], to client: inout PortMappingClient, at now: Instant) -> Bool {
        bytes.withUnsafeBytes { client.handle($0, now: now) }
    }

    /// The gateway's PCP answer to `request`: `result`, `lifetime`, mapped to `external` (or another nonce).
    func pcpAnswer(
        _ request: [UInt8], result: UInt8 = 0, lifetime: UInt32 = 7200, external: NetworkAddress? = nil,
        nonce: [UInt8]? = nil
    ) -> [UInt8] {
        let mapped = external ?? self.external
        return PCPResponse(
            resultCode: result, lifetime: lifetime, epoch: 100,
            map: .init(
                nonce: nonce ?? Array(request[24..<36]), protocolNumber: 17,
                internalPort: UInt16(request[40]) << 8 | UInt16(request[41]), externalPort: mapped.port,
                externalAddress: PCPMapRequest.pcpAddress(mapped.addressBytes))
        ).encoded()
    }

    @Test("PCP first: a 60-byte MAP request naming the client address (IPv4-mapped) and the socket's port, for 7200 s")
    func pcpRequestLayout() {
        var client = client()
        #expect(client.gateway == gateway, "requests go to port 5351 whatever port the gateway was given with")
        let sent = drive(&client, from: .zero, until: .zero)
        let request = sent[0].1
        #expect(request.count == 60)
        #expect(request[0] == 2 && request[1] == 1, "version 2, MAP")
        #expect(Array(request[4..<8]) == [0, 0, 0x1C, 0x20], "7200 s")
        #expect(Array(request[8..<24]) == [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 192, 168, 1, 20])
        #expect(Array(request[24..<36]) == nonce)
        #expect(request[36] == 17, "UDP")
        #expect(Array(request[40..<44]) == [0x1B, 0x58, 0x1B, 0x58], "internal port 7000, the same one suggested")
        #expect(Array(request[44..<60]) == [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 0, 0, 0, 0])
    }

    @Test("The answer maps; renewal goes at half the lifetime (at most 300 s) and asks for the same address and port")
    func mapsAndRenews() {
        var client = client()
        let request = drive(&client, from: .zero, until: .zero)[0].1
        let changed = feed(pcpAnswer(request), to: &client, at: .zero + .milliseconds(2))
        #expect(changed)
        #expect(client.mapping.externalAddress == external && client.mapping.mappingProtocol == .pcp)
        #expect(client.mapping.lifetime == .seconds(7200) && client.mapping.failure == nil)
        #expect(client.nextDeadline == .zero + .milliseconds(2) + .seconds(300))
        // A gateway that grants 120 s is renewed after 60.
        var short = self.client()
        let shortRequest = drive(&short, from: .zero, until: .zero)[0].1
        _ = feed(pcpAnswer(shortRequest, lifetime: 120), to: &short, at: .zero)
        #expect(short.nextDeadline == .zero + .seconds(60))
        // The renewal suggests what was granted, with the same nonce.
        let renewal = drive(&client, from: .zero + .seconds(300), until: .zero + .seconds(300) + .milliseconds(2))
        #expect(renewal.count == 1)
        let bytes = renewal[0].1
        #expect(Array(bytes[24..<36]) == nonce)
        #expect(Array(bytes[42..<44]) == [0x1B, 0x58])
        #expect(Array(bytes[56..<60]) == [198, 51, 100, 7])
        // The same answer is no news; a mapping that moved at the next renewal is.
        #expect(!feed(pcpAnswer(bytes), to: &client, at: .zero + .seconds(301)))
        let next = drive(&client, from: .zero + .seconds(601), until: .zero + .seconds(601))
        let moved = NetworkAddress(ipv4: 198, 51, 100, 7, port: 40_001)
        #expect(feed(pcpAnswer(next[0].1, external: moved), to: &client, at: .zero + .seconds(601)))
        #expect(client.mapping.externalAddress == moved)
    }

    @Test("An answer with another nonce, for another port, or with nothing in flight is dropped and counted")
    func dropsForgeries() {
        var client = client()
        let request = drive(&client, from: .zero, until: .zero)[0].1
        #expect(!feed(pcpAnswer(request, nonce: [UInt8](repeating: 7, count: 12)), to: &client, at: .zero))
        var otherPort = request
        otherPort[40] = 0
        #expect(!feed(pcpAnswer(otherPort), to: &client, at: .zero))
        #expect(!feed([UInt8](repeating: 0xFF, count: 7), to: &client, at: .zero))
        #expect(client.datagramsDropped == 3 && client.mapping.externalAddress == nil)
        _ = feed(pcpAnswer(request), to: &client, at: .zero)
        // Mapped: a duplicate answer matches nothing in flight.
        #expect(!feed(pcpAnswer(request), to: &client, at: .zero))
        #expect(client.datagramsDropped == 4)
    }

    @Test("A gateway that answers PCP with NAT-PMP's 'unsupported version' is asked over NAT-PMP at once")
    func natPMPOnlyGateway() throws {
        var client = client()
        _ = drive(&client, from: .zero, until: .zero)
        // RFC 6886 3.5: version 0, opcode 128 + the request's, result 1.
        let unsupported = NATPMPResponse(opcode: 1, resultCode: 1, epoch: 5, body: .none).encoded()
        #expect(!feed(unsupported, to: &client, at: .zero + .milliseconds(1)))
        var requests: [[UInt8]] = []
        while let datagram = client.pollTransmit() { requests.append(datagram) }
        #expect(requests == [[0, 0], [0, 1, 0, 0, 0x1B, 0x58, 0x1B, 0x58, 0, 0, 0x1C, 0x20]])
        let address = NATPMPResponse(opcode: 0, resultCode: 0, epoch: 5, body: .externalAddress([198, 51, 100, 7]))
        #expect(!feed(address.encoded(), to: &client, at: .zero + .milliseconds(2)))
        let mapped = NATPMPResponse(
            opcode: 1, resultCode: 0, epoch: 5, body: .mappedUDP(internalPort: 7000, externalPort: 7000, lifetime: 3600)
        )
        #expect(feed(mapped.encoded(), to: &client, at: .zero + .milliseconds(3)))
        #expect(client.mapping.mappingProtocol == .natPMP && client.mapping.externalAddress == external)
        #expect(client.mapping.lifetime == .seconds(3600))
        // Renewals stay on NAT-PMP.
        let renewal = drive(&client, from: .zero + .seconds(301), until: .zero + .seconds(301))
        #expect(renewal.map(\.1.count) == [2, 12])
    }

    @Test(
        "Answers that grant port 0, no time, or the address 0.0.0.0 are unusable grants, not mappings (found by fuzzing)"
    )
    func natPMPUnusableGrants() {
        for (address, port, lifetime) in [
            ([UInt8]([198, 51, 100, 7]), UInt16(0), UInt32(3600)), ([198, 51, 100, 7], 7000, 0),
            ([0, 0, 0, 0], 7000, 3600),
        ] {
            var client = client()
            _ = drive(&client, from: .zero, until: .zero)
            let unsupported = NATPMPResponse(opcode: 1, resultCode: 1, epoch: 5, body: .none).encoded()
            _ = feed(unsupported, to: &client, at: .zero)
            let answers = [
                NATPMPResponse(opcode: 0, resultCode: 0, epoch: 5, body: .externalAddress(address)),
                NATPMPResponse(
                    opcode: 1, resultCode: 0, epoch: 5,
                    body: .mappedUDP(internalPort: 7000, externalPort: port, lifetime: lifetime)),
            ]
            for answer in answers { _ = feed(answer.encoded(), to: &client, at: .zero) }
            #expect(client.mapping.externalAddress == nil, "\(address) \(port) \(lifetime)")
            #expect(client.mapping.failure == .unusableGrant(.natPMP))
        }
        var pcp = client()
        let request = drive(&pcp, from: .zero, until: .zero)[0].1
        _ = feed(pcpAnswer(request, external: NetworkAddress(ipv4: 198, 51, 100, 7, port: 0)), to: &pcp, at: .zero)
        #expect(pcp.mapping.failure == .unusableGrant(.pcp))
    }

    @Test(
        "Silence: PCP at 0, 0.25 and 0.75 s, NAT-PMP at 1.75, 2 and 2.5 s, the failure at 3.5 s; asked again 600 s later"
    )
    func unanswered() {
        var client = client()
        let sent = drive(&client, from: .zero, until: .zero + .seconds(4))
        #expect(
            sent.map { $0.0 - .zero } == [
                .zero, .milliseconds(250), .milliseconds(750), .milliseconds(1750), .milliseconds(1750),
                .milliseconds(2000), .milliseconds(2000), .milliseconds(2500), .milliseconds(2500),
            ])
        #expect(sent.prefix(3).allSatisfy { $0.1.count == 60 })
        #expect(sent.dropFirst(3).allSatisfy { $0.1.count == 2 || $0.1.count == 12 })
        #expect(client.mapping.failure == .unanswered)
        #expect(client.nextDeadline == .zero + .milliseconds(3500) + .seconds(600))
        let again = drive(&client, from: .zero + .seconds(604), until: .zero + .seconds(604))
        #expect(again.map(\.1.count) == [60], "a retry starts over with PCP")
    }

    @Test("A refusal is a failure with the protocol and result code; PCP's retry follows the error's lifetime")
    func refused() {
        var client = client()
        let request = drive(&client, from: .zero, until: .zero)[0].1
        // NOT_AUTHORIZED, expected to last 120 s.
        #expect(feed(pcpAnswer(request, result: 2, lifetime: 120), to: &client, at: .zero))
        #expect(client.mapping.failure == .refused(.pcp, resultCode: 2))
        #expect(client.nextDeadline == .zero + .seconds(120))
        #expect("\(client.mapping.failure!)" == "the gateway refused the pcp mapping (result code 2)")
    }

    @Test("Release deletes the mapping with one lifetime-0 request (PCP: the same nonce) and stops every timer")
    func release() {
        var client = client()
        let request = drive(&client, from: .zero, until: .zero)[0].1
        _ = feed(pcpAnswer(request), to: &client, at: .zero)
        let released = client.release(now: .zero + .seconds(10))
        #expect(released)
        let deletion = client.pollTransmit()
        #expect(deletion.map { Array($0[4..<8]) } == [0, 0, 0, 0])
        #expect(deletion.map { Array($0[24..<36]) } == nonce)
        #expect(client.pollTransmit() == nil && client.nextDeadline == nil)
        #expect(client.mapping.externalAddress == nil && client.mapping.failure == nil)
        // Never mapped: nothing to delete.
        var unmapped = self.client()
        let releasedUnmapped = unmapped.release(now: .zero)
        #expect(!releasedUnmapped)
        #expect(unmapped.pollTransmit() == nil && unmapped.nextDeadline == nil)
    }

    @Test("An endpoint asks at most two gateways; the mapped address is offered first and reported as an event")
    func endpointMaps() throws {
        var random = ChaChaRandomGenerator(seed: 7)
        let configuration = EndpointConfiguration(
            identity: Identity(using: &random), prologue: [], wallClockAtOrigin: TAI64N(seconds: 0, nanoseconds: 0))
        var endpoint = Endpoint(configuration: configuration, generator: ChaChaRandomGenerator(seed: 8))
        endpoint.setLocalAddresses([local])
        endpoint.addPortMapping(gateway: gateway, localAddress: local, now: .zero)
        endpoint.addPortMapping(gateway: gateway.withPort(0), localAddress: local, now: .zero)
        endpoint.addPortMapping(
            gateway: NetworkAddress(ipv4: 10, 0, 0, 1, port: 0), localAddress: local, now: .zero)
        endpoint.addPortMapping(
            gateway: NetworkAddress(ipv4: 10, 0, 0, 2, port: 0), localAddress: local, now: .zero)
        #expect(endpoint.portMappings.count == ProtocolLimits.maxPortMappingGateways)
        #expect(endpoint.nextDeadline == .zero)
        endpoint.handleTimeout(now: .zero)
        var request: [UInt8]?
        while let (destination, datagram) = endpoint.pollTransmit(now: .zero) {
            if destination == gateway { request = datagram }
        }
        var reply = pcpAnswer(try #require(request))
        reply.withUnsafeMutableBytes { endpoint.handle(datagram: $0, from: gateway, now: .zero + .milliseconds(1)) }
        #expect(endpoint.portMappings.first?.externalAddress == external)
        #expect(endpoint.candidates.first == external && endpoint.candidates.contains(local))
        var changes: [NetworkAddress] = []
        while let event = endpoint.pollEvent() {
            if case .portMappingChanged(let changed) = event { changes.append(changed) }
        }
        #expect(changes == [gateway])
        var junk: [UInt8] = [2, 0x81]
        junk.withUnsafeMutableBytes { endpoint.handle(datagram: $0, from: gateway, now: .zero + .milliseconds(2)) }
        #expect(endpoint.statistics.portMappingDatagramsDropped == 1)
        // Closing deletes it at the gateway.
        endpoint.releasePortMappings(now: .zero + .seconds(1))
        let deletions = Array(sequence(state: ()) { _ in endpoint.pollTransmit(now: .zero + .seconds(1)) })
        #expect(deletions.filter { $0.0 == gateway }.map { Array($0.1[4..<8]) } == [[0, 0, 0, 0]])
        #expect(endpoint.candidates.first == local)
    }
}
