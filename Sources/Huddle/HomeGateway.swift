import HuddleProtocol

#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    @preconcurrency import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A default gateway of this machine that may map a port for the node (PCP or NAT-PMP), with the address the
/// machine has toward it.
///
/// Only a gateway reached from a private address (RFC 1918, or RFC 6598's carrier-grade 100.64/10) is one: that is
/// the home or office router doing NAT. A machine with a public address toward its gateway has nothing to map.
struct HomeGateway: Sendable, Equatable {
    /// The gateway's address (port 0).
    let address: NetworkAddress
    /// This machine's address toward it (port 0): the source the kernel picks for it, which PCP names.
    let localAddress: NetworkAddress

    /// The machine's IPv4 default gateways reached from a private address, at most
    /// `ProtocolLimits.maxPortMappingGateways`. Read from Linux's `/proc/net/route`; empty elsewhere (and when the
    /// table cannot be read).
    static func discover() -> [HomeGateway] {
        guard let table = try? String(contentsOfFile: "/proc/net/route", encoding: .utf8) else { return [] }
        var found: [HomeGateway] = []
        for gateway in defaultGateways(routeTable: table) {
            guard let local = localAddress(toward: gateway), isPrivate(local),
                !found.contains(where: { $0.address == gateway })
            else { continue }
            found.append(HomeGateway(address: gateway, localAddress: local))
        }
        return Array(found.prefix(ProtocolLimits.maxPortMappingGateways))
    }

    /// The gateways of the default routes (destination 0.0.0.0/0, up, through a gateway) in the text of Linux's
    /// `/proc/net/route`: tab-separated columns, addresses as 8 hex digits in the machine's byte order.
    static func defaultGateways(routeTable: String) -> [NetworkAddress] {
        let up: UInt32 = 0x1
        let viaGateway: UInt32 = 0x2
        var gateways: [NetworkAddress] = []
        for line in routeTable.split(separator: "\n").dropFirst() {
            let columns = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            guard columns.count >= 8, columns[1] == "00000000", columns[7] == "00000000",
                let gateway = UInt32(columns[2], radix: 16), gateway != 0,
                let flags = UInt32(columns[3], radix: 16), flags & (up | viaGateway) == up | viaGateway
            else { continue }
            // The kernel prints the network-order bytes read as a native integer, so its native bytes are the address.
            let bytes = withUnsafeBytes(of: gateway) { Array($0) }
            let address = NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: 0)
            if !gateways.contains(address) { gateways.append(address) }
        }
        return gateways
    }

    /// Whether `address` is in private IPv4 space (10/8, 172.16/12, 192.168/16, 100.64/10).
    static func isPrivate(_ address: NetworkAddress) -> Bool {
        guard address.family == .ipv4 else { return false }
        let bytes = address.addressBytes
        return bytes[0] == 10 || (bytes[0] == 172 && bytes[1] & 0xF0 == 16) || (bytes[0] == 192 && bytes[1] == 168)
            || (bytes[0] == 100 && bytes[1] & 0xC0 == 64)
    }

    /// The source address the kernel would use toward `gateway` (a UDP socket connected to it, which sends
    /// nothing), port 0; nil if there is no route.
    static func localAddress(toward gateway: NetworkAddress) -> NetworkAddress? {
        #if canImport(Glibc) || canImport(Musl)
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_DGRAM, 0)
        #endif
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var remote = sockaddr_in(ipv4: gateway.addressBytes, port: ProtocolLimits.portMappingServerPort)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return nil }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        let bytes = local.ipv4Bytes
        return NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: 0)
    }
}
