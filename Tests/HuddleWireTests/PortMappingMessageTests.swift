import HuddleWire
import Testing

/// PCP (RFC 6887) and NAT-PMP (RFC 6886) messages: their layouts byte for byte, and decoding that throws on
/// anything short or foreign.
@Suite("PCP and NAT-PMP messages")
struct PortMappingMessageTests {
    @Test("A PCP MAP request is 60 bytes in RFC 6887's order, big-endian, IPv4 addresses IPv4-mapped")
    func pcpRequestLayout() {
        let request = PCPMapRequest(
            lifetime: 0x0102_0304, clientAddress: PCPMapRequest.pcpAddress([192, 168, 1, 2]),
            nonce: Array(21...32), internalPort: 0x1B58, suggestedExternalPort: 0x2710,
            suggestedExternalAddress: PCPMapRequest.pcpAddress([0, 0, 0, 0]))
        let mapped = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF]
        #expect(
            request.encoded() == [2, 1, 0, 0, 1, 2, 3, 4] + mapped + [192, 168, 1, 2] + Array(21...32)
                + [17, 0, 0, 0, 0x1B, 0x58, 0x27, 0x10] + mapped + [0, 0, 0, 0])
        #expect(request.encoded().count == PCPMapRequest.encodedLength)
        #expect(PCPMapRequest.pcpAddress(Array(repeating: 0x20, count: 16)) == Array(repeating: 0x20, count: 16))
    }

    @Test("A PCP MAP response round-trips; a header-only error response has no MAP fields")
    func pcpResponse() throws {
        let response = PCPResponse(
            resultCode: 0, lifetime: 7200, epoch: 99,
            map: .init(
                nonce: Array(1...12), protocolNumber: 17, internalPort: 7000, externalPort: 40_000,
                externalAddress: PCPMapRequest.pcpAddress([198, 51, 100, 7])))
        let bytes = response.encoded()
        #expect(bytes.count == PCPResponse.mapLength)
        #expect(bytes[1] == 0x81, "the response bit and MAP")
        #expect(try bytes.withUnsafeBytes { try PCPResponse(decoding: $0) } == response)
        let header = Array(bytes.prefix(PCPResponse.headerLength))
        let error = try header.withUnsafeBytes { try PCPResponse(decoding: $0) }
        #expect(error.map == nil && error.lifetime == 7200 && !error.isNATPMPOnly)
    }

    @Test("A NAT-PMP 'unsupported version' answer to a PCP request is recognised; other NAT-PMP replies are not PCP")
    func natPMPAnswerToPCP() throws {
        let unsupported: [UInt8] = [0, 0x81, 0, 1, 0, 0, 0, 5]
        let decoded = try unsupported.withUnsafeBytes { try PCPResponse(decoding: $0) }
        #expect(decoded.isNATPMPOnly && decoded.resultCode == PCPResponse.unsupportedVersion)
        let success: [UInt8] = [0, 0x80, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4]
        #expect(throws: WireError.self) { try success.withUnsafeBytes { try PCPResponse(decoding: $0) } }
    }

    @Test("PCP decoding throws on a short header, another version, or a request (no response bit)")
    func pcpRejects() {
        var bytes = PCPResponse(
            resultCode: 0, lifetime: 1, epoch: 1,
            map: .init(
                nonce: Array(1...12), protocolNumber: 17, internalPort: 1, externalPort: 1,
                externalAddress: Array(repeating: 1, count: 16))
        ).encoded()
        #expect(throws: WireError.truncated(needed: 24, available: 23)) {
            try Array(bytes.prefix(23)).withUnsafeBytes { try PCPResponse(decoding: $0) }
        }
        bytes[0] = 1
        #expect(throws: WireError.self) { try bytes.withUnsafeBytes { try PCPResponse(decoding: $0) } }
        bytes[0] = 2
        bytes[1] = 0x01
        #expect(throws: WireError.self) { try bytes.withUnsafeBytes { try PCPResponse(decoding: $0) } }
    }

    @Test("NAT-PMP requests are 2 and 12 bytes in RFC 6886's order")
    func natPMPRequests() {
        #expect(NATPMPRequest.externalAddress.encoded() == [0, 0])
        #expect(
            NATPMPRequest.mapUDP(internalPort: 0x1B58, suggestedExternalPort: 0x2710, lifetime: 7200).encoded() == [
                0, 1, 0, 0, 0x1B, 0x58, 0x27, 0x10, 0, 0, 0x1C, 0x20,
            ])
    }

    @Test("NAT-PMP responses decode (external address, UDP mapping, an error cut after the epoch) and round-trip")
    func natPMPResponses() throws {
        let address: [UInt8] = [0, 0x80, 0, 0, 0, 0, 1, 0, 198, 51, 100, 7]
        #expect(
            try address.withUnsafeBytes { try NATPMPResponse(decoding: $0) }
                == NATPMPResponse(opcode: 0, resultCode: 0, epoch: 256, body: .externalAddress([198, 51, 100, 7])))
        let mapping: [UInt8] = [0, 0x81, 0, 0, 0, 0, 0, 9, 0x1B, 0x58, 0x9C, 0x40, 0, 0, 0x0E, 0x10]
        let decoded = try mapping.withUnsafeBytes { try NATPMPResponse(decoding: $0) }
        #expect(decoded.body == .mappedUDP(internalPort: 7000, externalPort: 40_000, lifetime: 3600))
        #expect(decoded.encoded() == mapping)
        let refused: [UInt8] = [0, 0x81, 0, 2, 0, 0, 0, 9]
        let error = try refused.withUnsafeBytes { try NATPMPResponse(decoding: $0) }
        #expect(error.resultCode == 2 && error.body == NATPMPResponse.Body.none)
    }

    @Test("NAT-PMP decoding throws on a short message, another version, or an opcode Huddle never sends")
    func natPMPRejects() {
        for bytes: [UInt8] in [
            [0, 0x80, 0, 0, 0, 0, 0],  // shorter than the header
            [0, 0x80, 0, 0, 0, 0, 0, 1, 198, 51],  // success without the whole address
            [0, 0x81, 0, 0, 0, 0, 0, 1, 0x1B, 0x58, 0x9C, 0x40, 0, 0],  // success without the whole mapping
            [2, 0x80, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4],  // PCP's version
            [0, 0x82, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8],  // TCP mapping
            [0, 0x01, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8],  // a request
        ] {
            #expect(throws: WireError.self, "\(bytes)") {
                try bytes.withUnsafeBytes { try NATPMPResponse(decoding: $0) }
            }
        }
    }
}
