/// A NAT-PMP response (RFC 6886 3.2 and 3.3). Big-endian, `version 0 | opcode 128 + request's | result (2) |
/// epoch (4)`, then:
///
/// - external address (opcode 128): `address (4)`, 12 bytes in all;
/// - map UDP (opcode 129): `internal port (2) | mapped external port (2) | lifetime (4)`, 16 bytes in all.
///
/// On an error the fields after the epoch are undefined; a response that stops after the epoch is accepted then.
public struct NATPMPResponse: Sendable, Equatable {
    /// The common part's length.
    public static let headerLength = 8
    /// NAT-PMP's success result code.
    public static let success: UInt16 = 0

    /// What a successful response carries.
    public enum Body: Sendable, Equatable {
        /// The gateway's external IPv4 address (4 bytes).
        case externalAddress([UInt8])
        /// A UDP mapping: the port on this node, the external port and the seconds it lasts.
        case mappedUDP(internalPort: UInt16, externalPort: UInt16, lifetime: UInt32)
        /// Nothing usable: an error response.
        case none
    }

    /// The request's opcode (the response's minus 128).
    public var opcode: UInt8
    /// 0 on success; RFC 6886 3.5's codes otherwise (2 not authorized, 3 network failure, 4 out of resources).
    public var resultCode: UInt16
    /// Seconds since the gateway started keeping mappings; a jump back means it lost them.
    public var epoch: UInt32
    /// The response's fields.
    public var body: Body

    /// A response to encode (what a gateway sends; tests and fuzzing play one).
    public init(opcode: UInt8, resultCode: UInt16, epoch: UInt32, body: Body) {
        self.opcode = opcode
        self.resultCode = resultCode
        self.epoch = epoch
        self.body = body
    }

    /// Decodes a response. Throws ``WireError/truncated(needed:available:)`` when too short for its opcode,
    /// ``WireError/valueOutOfRange(field:value:limit:)`` for another version or an opcode that is not a response
    /// to one Huddle sends.
    public init(decoding bytes: UnsafeRawBufferPointer) throws(WireError) {
        guard bytes.count >= Self.headerLength else {
            throw .truncated(needed: Self.headerLength, available: bytes.count)
        }
        guard bytes[0] == NATPMPRequest.version else {
            throw .valueOutOfRange(field: .portMappingVersion, value: UInt64(bytes[0]), limit: 0)
        }
        guard bytes[1] == 0x80 | NATPMPRequest.externalAddressOpcode || bytes[1] == 0x80 | NATPMPRequest.mapUDPOpcode
        else {
            throw .valueOutOfRange(field: .portMappingOpcode, value: UInt64(bytes[1]), limit: 0x81)
        }
        opcode = bytes[1] & 0x7F
        resultCode = BigEndianBytes.uint16(bytes, at: 2)
        epoch = BigEndianBytes.uint32(bytes, at: 4)
        guard resultCode == Self.success else {
            body = .none
            return
        }
        if opcode == NATPMPRequest.externalAddressOpcode {
            guard bytes.count >= 12 else { throw .truncated(needed: 12, available: bytes.count) }
            body = .externalAddress(Array(bytes[8..<12]))
        } else {
            guard bytes.count >= 16 else { throw .truncated(needed: 16, available: bytes.count) }
            body = .mappedUDP(
                internalPort: BigEndianBytes.uint16(bytes, at: 8), externalPort: BigEndianBytes.uint16(bytes, at: 10),
                lifetime: BigEndianBytes.uint32(bytes, at: 12))
        }
    }

    /// The response's bytes.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = [NATPMPRequest.version, 0x80 | opcode]
        BigEndianBytes.append(resultCode, to: &bytes)
        BigEndianBytes.append(epoch, to: &bytes)
        switch body {
        case .externalAddress(let address):
            bytes += address
        case .mappedUDP(let internalPort, let externalPort, let lifetime):
            BigEndianBytes.append(internalPort, to: &bytes)
            BigEndianBytes.append(externalPort, to: &bytes)
            BigEndianBytes.append(lifetime, to: &bytes)
        case .none:
            break
        }
        return bytes
    }
}
