import HuddleProtocol

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// A blocking IPv4 UDP socket for `huddle doctor`'s STUN probes, with the don't-fragment bit set (so a probe larger
/// than the path is refused or dropped, never fragmented). The doctor is a one-shot diagnostic: it waits on this
/// socket from a thread of its own, not in the node's event loop.
final class DoctorSocket {
    private let descriptor: Int32
    /// The bound address (the port the kernel chose when asked for 0).
    let localAddress: NetworkAddress

    /// A socket bound to `host` (an IPv4 literal) and `port`.
    init(host: String, port: UInt16) throws(DoctorError) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw .socket("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(descriptor)
            throw .socket("\(host) is not an IPv4 address (the doctor probes over IPv4)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .socket("bind \(host):\(port): \(reason)")
        }
        var dontFragment = Int32(IP_PMTUDISC_DO)
        setsockopt(
            descriptor, Int32(IPPROTO_IP), IP_MTU_DISCOVER, &dontFragment, socklen_t(MemoryLayout<Int32>.size))
        self.descriptor = descriptor
        let bytes = withUnsafeBytes(of: address.sin_addr) { Array($0) }
        localAddress = NetworkAddress(
            ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    /// Sends `bytes` to `destination` (IPv4); `false` when the kernel refused it (EMSGSIZE above the path MTU it
    /// knows, an unreachable network).
    @discardableResult
    func send(_ bytes: [UInt8], to destination: NetworkAddress) -> Bool {
        guard destination.family == .ipv4 else { return false }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = destination.port.bigEndian
        destination.addressBytes.withUnsafeBytes { raw in
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyMemory(from: raw) }
        }
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return sent == bytes.count
    }

    /// The next datagram and where it came from, or `nil` when none arrives within `timeout`.
    func receive(timeout: Duration) -> (bytes: [UInt8], source: NetworkAddress)? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = max(
            0, Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        guard poll(&poller, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(descriptor, raw.baseAddress, raw.count, 0, $0, &length)
                }
            }
        }
        guard count >= 0 else { return nil }
        let bytes = withUnsafeBytes(of: address.sin_addr) { Array($0) }
        return (
            Array(buffer[0..<count]),
            NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: UInt16(bigEndian: address.sin_port))
        )
    }
}

/// Why `huddle doctor` could not run its probes.
enum DoctorError: Error, CustomStringConvertible {
    /// The probe socket could not be opened or bound.
    case socket(String)

    var description: String {
        switch self {
        case .socket(let reason): return reason
        }
    }
}

extension DoctorSocket {
    /// The local IPv4 address the kernel sends from toward `destination` (a connected UDP socket's name; nothing is
    /// sent), or `nil`.
    static func sourceIP(toward destination: NetworkAddress) -> [UInt8]? {
        guard destination.family == .ipv4 else { return nil }
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = destination.port.bigEndian
        destination.addressBytes.withUnsafeBytes { raw in
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyMemory(from: raw) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        return named ? withUnsafeBytes(of: address.sin_addr) { Array($0) } : nil
    }
}
