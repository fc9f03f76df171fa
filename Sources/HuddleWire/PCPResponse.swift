/// A PCP response (RFC 6887 7.2), with a MAP response's fields (11.1) when it carries them. Big-endian:
///
/// `version 2 | R=1, opcode | reserved | result code | lifetime (4) | epoch time (4) | reserved (12)` and, for MAP,
/// `nonce (12) | protocol | reserved (3) | internal port (2) | assigned external port (2) | assigned external IP (16)`.
///
/// A gateway that speaks only NAT-PMP answers a PCP request with a NAT-PMP "unsupported version" response
/// (version 0); ``init(decoding:)`` reports that as ``isNATPMPOnly`` so the client can switch.
public struct PCPResponse: Sendable, Equatable {
    /// The length of the common header.
    public static let headerLength = 24
    /// The length of a MAP response.
    public static let mapLength = 60
    /// PCP's SUCCESS result code.
    public static let success: UInt8 = 0
    /// PCP's UNSUPP_VERSION result code.
    public static let unsupportedVersion: UInt8 = 1

    /// The request's opcode (the R bit cleared).
    public var opcode: UInt8
    /// 0 on success; otherwise RFC 6887 19.4's codes (for example 2 NOT_AUTHORIZED, 8 NO_RESOURCES,
    /// 12 ADDRESS_MISMATCH).
    public var resultCode: UInt8
    /// Seconds the mapping lasts (on an error: how long the error is expected to last).
    public var lifetime: UInt32
    /// The server's epoch: seconds since it started keeping mappings; a jump back means it lost them.
    public var epoch: UInt32
    /// The MAP fields, when the response carries them.
    public var map: Map?
    /// Whether this was a NAT-PMP server's "unsupported version" answer (version 0, result 1).
    public var isNATPMPOnly: Bool

    /// A MAP response's fields.
    public struct Map: Sendable, Equatable {
        /// The request's nonce, echoed.
        public var nonce: [UInt8]
        /// The IANA protocol number (17 for UDP).
        public var protocolNumber: UInt8
        /// The port on this node.
        public var internalPort: UInt16
        /// The external port the gateway assigned.
        public var externalPort: UInt16
        /// The external address the gateway assigned (16 bytes; IPv4 addresses IPv4-mapped).
        public var externalAddress: [UInt8]

        /// MAP fields; `nonce` is 12 bytes, `externalAddress` 16.
        public init(
            nonce: [UInt8], protocolNumber: UInt8, internalPort: UInt16, externalPort: UInt16, externalAddress: [UInt8]
        ) {
            precondition(nonce.count == 12 && externalAddress.count == 16, "PCP: 12-byte nonce, 16-byte address")
            self.nonce = nonce
            self.protocolNumber = protocolNumber
            self.internalPort = internalPort
            self.externalPort = externalPort
            self.externalAddress = externalAddress
        }
    }

    /// Decodes a response. Throws ``WireError/truncated(needed:available:)`` when shorter than its header,
    /// ``WireError/valueOutOfRange(field:value:limit:)`` for a version other than 2 (or NAT-PMP's 0) or a
    /// message without the response bit.
    public init(decoding bytes: UnsafeRawBufferPointer) throws(WireError) {
        if bytes.count >= 4, bytes[0] == 0 {
            // NAT-PMP: only its "unsupported version" answer is meaningful to a PCP client.
            guard BigEndianBytes.uint16(bytes, at: 2) == UInt16(Self.unsupportedVersion) else {
                throw .valueOutOfRange(field: .portMappingVersion, value: 0, limit: UInt64(PCPMapRequest.version))
            }
            self.init(opcode: bytes[1] & 0x7F, resultCode: Self.unsupportedVersion, natPMPOnly: true)
            return
        }
        guard bytes.count >= Self.headerLength else {
            throw .truncated(needed: Self.headerLength, available: bytes.count)
        }
        guard bytes[0] == PCPMapRequest.version else {
            throw .valueOutOfRange(
                field: .portMappingVersion, value: UInt64(bytes[0]), limit: UInt64(PCPMapRequest.version))
        }
        guard bytes[1] & 0x80 != 0 else {
            throw .valueOutOfRange(field: .portMappingOpcode, value: UInt64(bytes[1]), limit: 0xFF)
        }
        self.init(opcode: bytes[1] & 0x7F, resultCode: bytes[3], natPMPOnly: false)
        lifetime = BigEndianBytes.uint32(bytes, at: 4)
        epoch = BigEndianBytes.uint32(bytes, at: 8)
        if opcode == PCPMapRequest.opcode, bytes.count >= Self.mapLength {
            map = Map(
                nonce: Array(bytes[24..<36]), protocolNumber: bytes[36],
                internalPort: BigEndianBytes.uint16(bytes, at: 40), externalPort: BigEndianBytes.uint16(bytes, at: 42),
                externalAddress: Array(bytes[44..<60]))
        }
    }

    /// A MAP response to encode (what a gateway sends; tests and fuzzing play one).
    public init(resultCode: UInt8, lifetime: UInt32, epoch: UInt32, map: Map) {
        self.init(opcode: PCPMapRequest.opcode, resultCode: resultCode, natPMPOnly: false)
        self.lifetime = lifetime
        self.epoch = epoch
        self.map = map
    }

    /// The response's bytes: the header, and the MAP fields when ``map`` is set.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = [PCPMapRequest.version, 0x80 | opcode, 0, resultCode]
        BigEndianBytes.append(lifetime, to: &bytes)
        BigEndianBytes.append(epoch, to: &bytes)
        bytes += [UInt8](repeating: 0, count: 12)
        if let map {
            bytes += map.nonce + [map.protocolNumber, 0, 0, 0]
            BigEndianBytes.append(map.internalPort, to: &bytes)
            BigEndianBytes.append(map.externalPort, to: &bytes)
            bytes += map.externalAddress
        }
        return bytes
    }

    private init(opcode: UInt8, resultCode: UInt8, natPMPOnly: Bool) {
        self.opcode = opcode
        self.resultCode = resultCode
        lifetime = 0
        epoch = 0
        map = nil
        isNATPMPOnly = natPMPOnly
    }
}
