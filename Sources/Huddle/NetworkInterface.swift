import HuddleProtocol

#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    @preconcurrency import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One address of one of the machine's network interfaces with the interface's flags: the library's one listing of
/// interfaces, read with `getifaddrs`.
///
/// The advertised addresses, the network path monitor and local-network discovery all filter this list. It carries
/// the interface flags (`IFF_UP`, `IFF_RUNNING`, `IFF_MULTICAST`, `IFF_LOOPBACK`) that SwiftNIO's device list leaves
/// out, which is why it is not that list.
struct NetworkInterface: Sendable, Equatable {
    /// The interface's name (`eth0`).
    let name: String
    /// The address, with port 0.
    let address: NetworkAddress
    /// The interface flags (`IFF_*`).
    let flags: UInt32

    /// Whether the interface has every flag in `required`.
    func has(_ required: Int32) -> Bool {
        flags & UInt32(required) == UInt32(required)
    }

    /// The IPv4 and IPv6 addresses of every interface, in the order `getifaddrs` gives them; empty if it fails.
    static func list() -> [NetworkInterface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var interfaces: [NetworkInterface] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let socketAddress = entry.pointee.ifa_addr, let address = Self.address(socketAddress) else {
                continue
            }
            interfaces.append(
                NetworkInterface(
                    name: String(cString: entry.pointee.ifa_name), address: address, flags: entry.pointee.ifa_flags))
        }
        return interfaces
    }

    /// `socketAddress` as a ``NetworkAddress`` with port 0, if it is IPv4 or IPv6.
    private static func address(_ socketAddress: UnsafeMutablePointer<sockaddr>) -> NetworkAddress? {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let bytes = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
            }
            return NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: 0)
        case AF_INET6:
            let bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
            }
            return NetworkAddress(ipv6: bytes, port: 0)
        default:
            return nil
        }
    }
}
