#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    @preconcurrency import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension sockaddr_in {
    /// An IPv4 socket address for the 4 bytes of `address` (network order) and `port`, for the plain POSIX sockets
    /// the node opens beside its NIO one (the route lookup toward a gateway, UPnP-IGD's exchanges).
    init(ipv4 address: [UInt8], port: UInt16) {
        self.init()
        sin_family = sa_family_t(AF_INET)
        sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &sin_addr) { $0.copyBytes(from: address) }
    }

    /// The 4 address bytes, in network order.
    var ipv4Bytes: [UInt8] { withUnsafeBytes(of: sin_addr) { Array($0) } }
}
