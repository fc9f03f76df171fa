import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A coturn `turnserver` (Debian's `coturn`, installed by `make deps`) on 127.0.0.1 for one test: long-term
/// credentials `ada:secret` in realm `huddle.test`, clients over UDP (and over TCP on the same port when asked),
/// loopback peers allowed (every peer of these tests is on loopback). Stopped by ``stop()`` (or when the object goes
/// away).
public final class Coturn: @unchecked Sendable {
    public static let executable = "/usr/bin/turnserver"
    public static let username = "ada"
    public static let password = "secret"
    public static let realm = "huddle.test"

    /// The UDP port it listens on (127.0.0.1).
    public let port: UInt16
    private let process = Process()
    private let directory: URL

    /// Whether coturn is installed here.
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// Starts a server on a free port (clients also over TCP when `tcp`; with `rfc5780`, also on 127.0.0.2 and an
    /// alternate port, so it answers RFC 5780's CHANGE-REQUEST and names an OTHER-ADDRESS) and waits until it answers
    /// a Binding request (at most 5 s).
    public init(tcp: Bool = false, rfc5780: Bool = false) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("coturn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try LoopbackUDPSocket().port
        // A relay port range of its own per server, so parallel tests do not collide.
        let relayBase = 41_000 + Int(port % 200) * 100
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments =
            [
                "-n", "--listening-ip=127.0.0.1", "--listening-port=\(port)", "--relay-ip=127.0.0.1",
                "--min-port=\(relayBase)", "--max-port=\(relayBase + 99)", "--lt-cred-mech",
                "--user=\(Self.username):\(Self.password)", "--realm=\(Self.realm)", "--allow-loopback-peers",
                "--no-tls", "--no-dtls", "--no-cli", "--no-tcp-relay",
                "--log-file=\(directory.appendingPathComponent("turn.log").path)", "--simple-log",
                "--pidfile=\(directory.appendingPathComponent("pid").path)",
                "--userdb=\(directory.appendingPathComponent("db").path)",
            ] + (tcp ? [] : ["--no-tcp"])
        if rfc5780 {
            let alternate = try LoopbackUDPSocket().port
            process.arguments! += ["--listening-ip=127.0.0.2", "--alt-listening-port=\(alternate)"]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let probe = try LoopbackUDPSocket()
        let binding: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 7, count: 12)
        for _ in 0..<50 {
            probe.send(binding, to: port)
            if probe.receive(timeout: .milliseconds(100)) != nil { return }
        }
        stop()
        throw CoturnError.notAnswering(log: log)
    }

    /// Starts a server in network namespace `namespace` on `ip`:`port`, clients over UDP and TCP on that port, and
    /// waits until both listen there (at most 5 s). Peers are what the namespace routes to (no loopback ones). With
    /// `alternateIP` (an address the namespace has) it also listens there and on port + 1, for RFC 5780's tests.
    public init(namespace: String, ip: String, port: UInt16, alternateIP: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("coturn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.port = port
        process.executableURL = URL(fileURLWithPath: NetworkNamespace.ip)
        process.arguments =
            [
                "netns", "exec", namespace, Self.executable, "-n", "--listening-ip=\(ip)", "--listening-port=\(port)",
                "--relay-ip=\(ip)", "--lt-cred-mech", "--user=\(Self.username):\(Self.password)",
                "--realm=\(Self.realm)",
                "--no-tls", "--no-dtls", "--no-cli", "--no-tcp-relay",
                "--log-file=\(directory.appendingPathComponent("turn.log").path)", "--simple-log",
                "--pidfile=\(directory.appendingPathComponent("pid").path)",
                "--userdb=\(directory.appendingPathComponent("db").path)",
            ] + (alternateIP.map { ["--listening-ip=\($0)", "--alt-listening-port=\(port + 1)"] } ?? [])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        if try NetworkNamespace(name: namespace).waitUntilListening(on: port, over: ["udp", "tcp"]) { return }
        stop()
        throw CoturnError.notAnswering(log: log)
    }

    /// What the server logged so far (for a failing test's message).
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("turn.log"), encoding: .utf8)) ?? ""
    }

    /// Stops the server (idempotent).
    public func stop() {
        NetworkNamespace.stop(process)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// Why a ``Coturn`` did not start.
public enum CoturnError: Error {
    /// It did not answer a Binding request within 5 s; what it logged.
    case notAnswering(log: String)
}

/// A blocking UDP socket on 127.0.0.1 for talking to coturn and playing a peer.
public final class LoopbackUDPSocket: @unchecked Sendable {
    let descriptor: Int32
    /// The bound port.
    public let port: UInt16

    /// A socket on 127.0.0.1 at a free port.
    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }

    /// Sends `bytes` to 127.0.0.1:`port`.
    public func send(_ bytes: [UInt8], to port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        _ = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// The next datagram and the port it came from, or `nil` after `timeout`.
    public func receive(timeout: Duration) -> (bytes: [UInt8], port: UInt16)? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
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
        return (Array(buffer[0..<count]), UInt16(bigEndian: address.sin_port))
    }
}
