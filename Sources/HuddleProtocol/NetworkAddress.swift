/// A UDP endpoint address (IPv4 or IPv6 plus port) held inline, without allocation, so it can be passed with every
/// datagram. The protocol core treats it as an opaque, hashable value; the transport converts to and from socket
/// addresses, the simulator makes them up.
public struct NetworkAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public enum Family: UInt8, Sendable {
        case ipv4 = 4
        case ipv6 = 6
    }

    /// The address family.
    public let family: Family
    /// The 16 address bytes (IPv4 uses the first four), as two big-endian words.
    private let high: UInt64
    private let low: UInt64
    /// The UDP port.
    public let port: UInt16

    /// An IPv4 address from four octets and a port.
    public init(ipv4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) {
        family = .ipv4
        high = UInt64(a) << 56 | UInt64(b) << 48 | UInt64(c) << 40 | UInt64(d) << 32
        low = 0
        self.port = port
    }

    /// An IPv6 address from 16 bytes and a port; `nil` for any other length.
    public init?(ipv6 bytes: some Collection<UInt8>, port: UInt16) {
        let array = Array(bytes)
        guard array.count == 16 else { return nil }
        family = .ipv6
        high = array[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        low = array[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        self.port = port
    }

    /// The address bytes: 4 for IPv4, 16 for IPv6.
    public var addressBytes: [UInt8] {
        let all =
            (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
        return family == .ipv4 ? Array(all.prefix(4)) : all
    }

    /// The same address with `port`.
    public func withPort(_ port: UInt16) -> NetworkAddress {
        switch family {
        case .ipv4:
            let bytes = addressBytes
            return NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: port)
        case .ipv6:
            return NetworkAddress(ipv6: addressBytes, port: port)!
        }
    }

    /// A canonical byte form (family, address, port) used to bind cookies to a source address.
    public var canonicalBytes: [UInt8] {
        [family.rawValue] + addressBytes + [UInt8(port >> 8), UInt8(truncatingIfNeeded: port)]
    }

    public var description: String {
        switch family {
        case .ipv4:
            return addressBytes.map(String.init).joined(separator: ".") + ":\(port)"
        case .ipv6:
            let bytes = addressBytes
            let groups = stride(from: 0, to: 16, by: 2).map {
                String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
            }
            return "[" + groups.joined(separator: ":") + "]:\(port)"
        }
    }
}
