import Foundation

#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    @preconcurrency import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The blocking network exchanges UPnP-IGD needs, each bounded by a timeout: an SSDP search (UDP) and one HTTP/1.1
/// request over TCP. They run on a thread of their own (``run(_:)``), never on the cooperative pool, and only ever
/// talk to the gateway: a description URL naming another host is not followed.
enum UPnPExchange {
    /// The SSDP multicast group and port (UPnP Device Architecture 1.1, 1.3).
    static let ssdpGroup: (address: [UInt8], port: UInt16) = ([239, 255, 255, 250], 1900)
    /// The largest HTTP response read (a router's device description is a few kilobytes).
    static let maxResponseBytes = 65_536
    /// The largest SSDP answer read.
    static let maxDatagramBytes = 2048

    /// Runs `body` on a thread outside Swift's cooperative pool and returns its result.
    static func run<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }

    /// Sends an M-SEARCH for an Internet Gateway Device to the multicast group and to `gateway` itself, from
    /// `localAddress`, and returns the LOCATION of the first answer that comes from `gateway` within `timeout`.
    static func search(gateway: [UInt8], localAddress: [UInt8], timeout: Duration) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var local = sockaddr_in(ipv4: localAddress, port: 0)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { return nil }
        let request = Array(
            ("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\n"
                + "ST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n\r\n").utf8)
        for destination in [ssdpGroup.address, gateway] {
            var address = sockaddr_in(ipv4: destination, port: ssdpGroup.port)
            _ = request.withUnsafeBytes { bytes in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: maxDatagramBytes)
        while let remaining = milliseconds(until: deadline), wait(fd, for: Int16(POLLIN), milliseconds: remaining) {
            var source = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &length)
                    }
                }
            }
            guard count > 0, source.ipv4Bytes == gateway else { continue }
            let answer = String(decoding: buffer.prefix(count), as: UTF8.self)
            if let location = UPnPMessages.header("LOCATION", in: answer) { return location }
        }
        return nil
    }

    /// An HTTP response: its status code and body.
    struct Response: Sendable {
        var status: Int
        var body: String
    }

    /// Sends `request` (a whole HTTP/1.1 request with `Connection: close`) to `host`:`port` and reads the response
    /// until the server closes, within `timeout` in all; nil when the exchange fails or the response exceeds
    /// ``maxResponseBytes``.
    static func http(_ request: String, host: [UInt8], port: UInt16, timeout: Duration) -> Response? {
        let deadline = ContinuousClock.now + timeout
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var address = sockaddr_in(ipv4: host, port: port)
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard started == 0 || errno == EINPROGRESS,
            let remaining = milliseconds(until: deadline), wait(fd, for: Int16(POLLOUT), milliseconds: remaining)
        else { return nil }
        var error: Int32 = 0
        var errorLength = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &errorLength) == 0, error == 0 else { return nil }
        var pending = Array(request.utf8)[...]
        while !pending.isEmpty {
            guard let remaining = milliseconds(until: deadline), wait(fd, for: Int16(POLLOUT), milliseconds: remaining)
            else { return nil }
            let sent = pending.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return nil }
            pending = pending.dropFirst(sent)
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            guard let remaining = milliseconds(until: deadline), wait(fd, for: Int16(POLLIN), milliseconds: remaining)
            else { return nil }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0, received.count + count <= maxResponseBytes else { return nil }
            received += buffer.prefix(count)
        }
        return UPnPMessages.parseResponse(received)
    }

    /// Milliseconds left until `deadline`, at least 1; nil once it passed.
    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32? {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return nil }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }

    /// Whether `fd` became ready for `events` within `milliseconds`.
    private static func wait(_ fd: Int32, for events: Int16, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        return poll(&entry, 1, milliseconds) == 1 && entry.revents & events != 0
    }
}
