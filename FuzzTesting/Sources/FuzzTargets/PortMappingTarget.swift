import HuddleProtocol
import HuddleWire

/// Datagrams from a home router's port 5351 (docs/PROTOCOL.md 10.2): `PCPResponse` and `NATPMPResponse` (what
/// decodes survives re-encoding), and a `PortMappingClient` with a PCP request in flight, then one that fell back to
/// NAT-PMP. The client may believe a NAT-PMP answer (NAT-PMP has no nonce) but never a PCP one without the
/// request's nonce, and whatever it maps must be a usable address (not the unspecified address, not port 0).
public enum PortMappingTarget: FuzzTarget {
    public static let name = "port-mapping"

    static let gateway = NetworkAddress(ipv4: 192, 168, 1, 1, port: 5351)
    static let local = NetworkAddress(ipv4: 192, 168, 1, 20, port: 7000)
    static let nonce: [UInt8] = [0x5A, 0x17, 0xC3, 0x09, 0xE4, 0x71, 0x2B, 0x88, 0x90, 0x3D, 0x66, 0xF1]

    public static func run(_ input: UnsafeRawBufferPointer) {
        if let response = try? PCPResponse(decoding: input), !response.isNATPMPOnly {
            let again = response.encoded().withUnsafeBytes { try? PCPResponse(decoding: $0) }
            precondition(again == response, "a PCP response does not survive re-encoding")
        }
        if let response = try? NATPMPResponse(decoding: input) {
            let again = response.encoded().withUnsafeBytes { try? NATPMPResponse(decoding: $0) }
            precondition(again == response, "a NAT-PMP response does not survive re-encoding")
        }
        var pcp = PortMappingClient(gateway: gateway, localAddress: local, nonce: nonce, now: .zero)
        pcp.handleTimeout(now: .zero)
        pcp.handle(input, now: .zero)
        if pcp.mapping.mappingProtocol == .pcp {
            precondition(input.count >= PCPResponse.mapLength && Array(input[24..<36]) == nonce, "PCP without nonce")
        }
        check(pcp.mapping)
        // Silence through PCP's three sends: the client asks NAT-PMP, and the same bytes arrive as its answer.
        var natPMP = PortMappingClient(gateway: gateway, localAddress: local, nonce: nonce, now: .zero)
        for milliseconds in [0, 250, 750, 1750] { natPMP.handleTimeout(now: .zero + .milliseconds(milliseconds)) }
        natPMP.handle(input, now: .zero + .milliseconds(1751))
        // A genuine external-address answer after it, so a fuzzed mapping answer can complete a mapping.
        let address = NATPMPResponse(opcode: 0, resultCode: 0, epoch: 9, body: .externalAddress([198, 51, 100, 7]))
        address.encoded().withUnsafeBytes { _ = natPMP.handle($0, now: .zero + .milliseconds(1752)) }
        check(natPMP.mapping)
    }

    static func check(_ mapping: PortMapping) {
        if let external = mapping.externalAddress {
            precondition(external.port != 0 && !external.addressBytes.allSatisfy { $0 == 0 }, "an unusable mapping")
            precondition(mapping.failure == nil && mapping.lifetime != nil)
        }
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let map = PCPResponse.Map(
            nonce: nonce, protocolNumber: 17, internalPort: 7000, externalPort: 40_000,
            externalAddress: PCPMapRequest.pcpAddress([198, 51, 100, 7]))
        return [
            ("pcp-map", PCPResponse(resultCode: 0, lifetime: 7200, epoch: 9, map: map).encoded()),
            ("pcp-refused", PCPResponse(resultCode: 2, lifetime: 120, epoch: 9, map: map).encoded()),
            ("natpmp-unsupported", NATPMPResponse(opcode: 1, resultCode: 1, epoch: 9, body: .none).encoded()),
            (
                "natpmp-address",
                NATPMPResponse(opcode: 0, resultCode: 0, epoch: 9, body: .externalAddress([198, 51, 100, 7])).encoded()
            ),
            (
                "natpmp-map",
                NATPMPResponse(
                    opcode: 1, resultCode: 0, epoch: 9,
                    body: .mappedUDP(internalPort: 7000, externalPort: 40_000, lifetime: 7200)
                ).encoded()
            ),
        ]
    }
}
