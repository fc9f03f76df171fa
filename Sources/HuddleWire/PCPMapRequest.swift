/// A PCP MAP request for UDP (RFC 6887 7.1 and 11.1): asks the gateway to forward an external port to this node's
/// port, for `lifetime` seconds (0 deletes the mapping). 60 bytes, big-endian:
///
/// `version 2 | R=0, opcode 1 | reserved (2) | lifetime (4) | client IP (16) | nonce (12) | protocol 17 |
/// reserved (3) | internal port (2) | suggested external port (2) | suggested external IP (16)`
///
/// IPv4 addresses are written IPv4-mapped (`::ffff:a.b.c.d`), as PCP requires.
public struct PCPMapRequest: Sendable, Equatable {
    /// PCP's version number.
    public static let version: UInt8 = 2
    /// The MAP opcode.
    public static let opcode: UInt8 = 1
    /// UDP's IANA protocol number, the only protocol Huddle maps.
    public static let udp: UInt8 = 17
    /// The encoded length.
    public static let encodedLength = 60

    /// Seconds the mapping should last; 0 deletes it.
    public var lifetime: UInt32
    /// The address the request leaves from, as the gateway sees it (16 bytes; a mismatch gets ADDRESS_MISMATCH).
    public var clientAddress: [UInt8]
    /// 12 random bytes that the response must echo; a renewal or deletion reuses the mapping's nonce.
    public var nonce: [UInt8]
    /// The port on this node.
    public var internalPort: UInt16
    /// The external port wanted (0: any); a renewal asks for the port it was given.
    public var suggestedExternalPort: UInt16
    /// The external address wanted (16 bytes; all zeros, or `::ffff:0.0.0.0` for any IPv4 address).
    public var suggestedExternalAddress: [UInt8]

    /// A request; `clientAddress` and `suggestedExternalAddress` are 16 bytes, `nonce` 12.
    public init(
        lifetime: UInt32, clientAddress: [UInt8], nonce: [UInt8], internalPort: UInt16,
        suggestedExternalPort: UInt16, suggestedExternalAddress: [UInt8]
    ) {
        precondition(clientAddress.count == 16 && suggestedExternalAddress.count == 16, "PCP addresses have 16 bytes")
        precondition(nonce.count == 12, "a PCP mapping nonce has 12 bytes")
        self.lifetime = lifetime
        self.clientAddress = clientAddress
        self.nonce = nonce
        self.internalPort = internalPort
        self.suggestedExternalPort = suggestedExternalPort
        self.suggestedExternalAddress = suggestedExternalAddress
    }

    /// The request's bytes.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = [Self.version, Self.opcode, 0, 0]
        bytes.reserveCapacity(Self.encodedLength)
        BigEndianBytes.append(lifetime, to: &bytes)
        bytes += clientAddress
        bytes += nonce
        bytes += [Self.udp, 0, 0, 0]
        BigEndianBytes.append(internalPort, to: &bytes)
        BigEndianBytes.append(suggestedExternalPort, to: &bytes)
        bytes += suggestedExternalAddress
        return bytes
    }

    /// `address` (4 or 16 bytes) as PCP writes it: IPv4 addresses IPv4-mapped.
    public static func pcpAddress(_ address: [UInt8]) -> [UInt8] {
        address.count == 4 ? [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + address : address
    }
}
