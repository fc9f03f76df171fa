/// A NAT-PMP request (RFC 6886 3.2 and 3.3), for gateways that do not speak PCP. Big-endian:
///
/// - external address: `version 0 | opcode 0` (2 bytes);
/// - map UDP: `version 0 | opcode 1 | reserved (2) | internal port (2) | suggested external port (2) |
///   lifetime (4)` (12 bytes); lifetime 0 (with suggested port 0) deletes the mapping.
public enum NATPMPRequest: Sendable, Equatable {
    /// Asks the gateway's external IPv4 address.
    case externalAddress
    /// Asks for a UDP mapping of `internalPort` for `lifetime` seconds.
    case mapUDP(internalPort: UInt16, suggestedExternalPort: UInt16, lifetime: UInt32)

    /// NAT-PMP's version number.
    public static let version: UInt8 = 0
    /// The opcode asking for the external address.
    public static let externalAddressOpcode: UInt8 = 0
    /// The opcode asking for a UDP mapping.
    public static let mapUDPOpcode: UInt8 = 1

    /// The request's bytes.
    public func encoded() -> [UInt8] {
        switch self {
        case .externalAddress:
            return [Self.version, Self.externalAddressOpcode]
        case .mapUDP(let internalPort, let suggestedExternalPort, let lifetime):
            var bytes: [UInt8] = [Self.version, Self.mapUDPOpcode, 0, 0]
            BigEndianBytes.append(internalPort, to: &bytes)
            BigEndianBytes.append(suggestedExternalPort, to: &bytes)
            BigEndianBytes.append(lifetime, to: &bytes)
            return bytes
        }
    }
}
