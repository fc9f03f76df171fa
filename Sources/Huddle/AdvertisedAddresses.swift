import HuddleProtocol
import HuddleSession

#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    @preconcurrency import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Chooses the addresses a node advertises (in its member record and in the tickets it writes) when the
/// application gives none.
///
/// A node bound to a specific address advertises that address. A node bound to the unspecified address
/// (`0.0.0.0` or `::`) is reachable at every address of its machine, so it advertises the machine's non-loopback
/// interface addresses first (a ticket names a member at its first address, and a ticket handed to another machine
/// must not name loopback), then loopback last (for members on the same machine). A socket on `::` is dual-stack: it
/// advertises the IPv4 addresses first (every peer can send to those; a joiner tries the next address 250 ms after
/// the first), then the IPv6 ones, and 127.0.0.1 as its loopback (which IPv4 and IPv6 sockets both reach). Link-local
/// addresses are left out: IPv6 ones need a scope id the ticket cannot carry, and IPv4 ones (169.254/16) are a
/// fallback no other machine is likely to share.
enum AdvertisedAddresses {
    /// The addresses to advertise for a socket bound at `bound`, given the machine's `interfaces` (any port; the
    /// bound port is used), at most ``ProtocolLimits/maxMemberAddresses``.
    static func choose(bound: NetworkAddress, interfaces: [NetworkAddress]) -> [NetworkAddress] {
        guard bound.addressBytes.allSatisfy({ $0 == 0 }) else { return [bound] }
        // An IPv6 socket on `::` carries IPv4 too.
        let families: [NetworkAddress.Family] = bound.family == .ipv4 ? [.ipv4] : [.ipv4, .ipv6]
        var chosen: [NetworkAddress] = []
        for family in families {
            for address in interfaces
            where address.family == family && !isLoopback(address) && !isLinkLocal(address)
                && !address.addressBytes.allSatisfy({ $0 == 0 })
            {
                let candidate = address.withPort(bound.port)
                if !chosen.contains(candidate) { chosen.append(candidate) }
            }
        }
        let loopback = NetworkAddress(ipv4: 127, 0, 0, 1, port: bound.port)
        return Array(chosen.prefix(ProtocolLimits.maxMemberAddresses - 1)) + [loopback]
    }

    /// `addresses`, with port 0 replaced by `port` (so an application can name a host and keep the bound port),
    /// duplicates removed, at most ``ProtocolLimits/maxMemberAddresses``.
    static func resolving(_ addresses: [NetworkAddress], port: UInt16) -> [NetworkAddress] {
        var resolved: [NetworkAddress] = []
        for address in addresses {
            let candidate = address.port == 0 ? address.withPort(port) : address
            if !resolved.contains(candidate) { resolved.append(candidate) }
        }
        return Array(resolved.prefix(ProtocolLimits.maxMemberAddresses))
    }

    /// The addresses of the machine's interfaces that are up (port 0), from ``NetworkInterface/list()``; `flags` are
    /// the interface flags an interface must have.
    static func interfaceAddresses(requiring flags: Int32 = Int32(IFF_UP)) -> [NetworkAddress] {
        NetworkInterface.list().filter { $0.has(flags) }.map(\.address)
    }

    static func isLoopback(_ address: NetworkAddress) -> Bool {
        let bytes = address.addressBytes
        switch address.family {
        case .ipv4: return bytes[0] == 127
        case .ipv6: return bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1
        }
    }

    static func isLinkLocal(_ address: NetworkAddress) -> Bool {
        let bytes = address.addressBytes
        switch address.family {
        case .ipv4: return bytes[0] == 169 && bytes[1] == 254
        case .ipv6: return bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
        }
    }
}
