import HuddleProtocol
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Converts between the protocol's inline ``NetworkAddress`` and NIO's `SocketAddress`.
///
/// A `SocketAddress` holds a heap box, so building one per transmitted datagram would allocate on the hot path;
/// the converter keeps a bounded cache of the destinations in use (a handful of peers in practice).
///
/// A dual-stack socket (IPv6, bound to `::`) carries IPv4 as v4-mapped IPv6 addresses (`::ffff:a.b.c.d`). The core
/// sees every IPv4 peer as IPv4 whatever the socket (so a ticket's IPv4 address matches the peer's datagrams): a
/// v4-mapped source is read as IPv4, and with ``mapsIPv4`` an IPv4 destination is written v4-mapped.
struct SocketAddressConverter {
    /// Cached destinations before the cache is reset (a peer roaming through many addresses cannot grow it).
    static let cacheLimit = 1_024

    private var cache: [NetworkAddress: SocketAddress] = [:]

    /// Whether the socket is IPv6, so IPv4 destinations go v4-mapped; setting it clears the cache.
    var mapsIPv4 = false {
        didSet { if mapsIPv4 != oldValue { cache.removeAll() } }
    }

    /// The socket address for `address`, from the cache when possible.
    mutating func socketAddress(for address: NetworkAddress) -> SocketAddress {
        if let cached = cache[address] { return cached }
        let converted =
            mapsIPv4 && address.family == .ipv4
            ? Self.makeSocketAddress(
                NetworkAddress(ipv6: Self.v4MappedPrefix + address.addressBytes, port: address.port)!)
            : Self.makeSocketAddress(address)
        if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
        cache[address] = converted
        return converted
    }

    /// The protocol address of `address`, or `nil` for anything but IPv4 and IPv6.
    static func networkAddress(_ address: SocketAddress) -> NetworkAddress? {
        switch address {
        case .v4(let ipv4):
            let raw = ipv4.address
            let host = UInt32(bigEndian: raw.sin_addr.s_addr)
            return NetworkAddress(
                ipv4: UInt8(truncatingIfNeeded: host >> 24), UInt8(truncatingIfNeeded: host >> 16),
                UInt8(truncatingIfNeeded: host >> 8), UInt8(truncatingIfNeeded: host),
                port: UInt16(bigEndian: raw.sin_port))
        case .v6(let ipv6):
            var raw = ipv6.address
            let port = UInt16(bigEndian: raw.sin6_port)
            return withUnsafeBytes(of: &raw.sin6_addr) { bytes in
                if bytes.prefix(12).elementsEqual(v4MappedPrefix) {
                    return NetworkAddress(ipv4: bytes[12], bytes[13], bytes[14], bytes[15], port: port)
                }
                return NetworkAddress(ipv6: bytes, port: port)
            }
        default:
            return nil
        }
    }

    /// The first 12 bytes of a v4-mapped IPv6 address.
    static let v4MappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]

    private static func makeSocketAddress(_ address: NetworkAddress) -> SocketAddress {
        let bytes = address.addressBytes
        switch address.family {
        case .ipv4:
            var raw = sockaddr_in()
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = address.port.bigEndian
            let host = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            raw.sin_addr.s_addr = host.bigEndian
            return SocketAddress(raw)
        case .ipv6:
            var raw = sockaddr_in6()
            raw.sin6_family = sa_family_t(AF_INET6)
            raw.sin6_port = address.port.bigEndian
            withUnsafeMutableBytes(of: &raw.sin6_addr) { target in
                bytes.withUnsafeBytes { target.copyMemory(from: $0) }
            }
            return SocketAddress(raw)
        }
    }
}

extension NetworkAddress {
    /// `address` as a network address; `nil` unless it is IPv4 or IPv6.
    public init?(_ address: SocketAddress) {
        guard let converted = SocketAddressConverter.networkAddress(address) else { return nil }
        self = converted
    }
}
