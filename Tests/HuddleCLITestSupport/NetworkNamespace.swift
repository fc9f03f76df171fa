import Foundation

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// A Linux network namespace made with `ip netns add`, for multi-host tests on one machine. Needs root and the `ip`
/// and `nft` commands; ``unavailableReason`` says why not when they are missing.
public struct NetworkNamespace: Sendable {
    /// The namespace's name (as `ip netns exec` takes it).
    public let name: String

    /// The `ip` command (iproute2).
    public static let ip = locate("ip")
    /// The `nft` command (nftables).
    public static let nft = locate("nft")

    private static func locate(_ command: String) -> String {
        let directories = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        return directories.map { "\($0)/\(command)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
            ?? "/usr/sbin/\(command)"
    }

    /// Why namespace tests cannot run here, or `nil` when they can (root, `ip` and `nft` present).
    public static var unavailableReason: String? {
        if geteuid() != 0 { return "network namespace tests need root (running as uid \(geteuid()))" }
        for tool in [ip, nft] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "network namespace tests need \(tool) (apt-get install iproute2 nftables)"
        }
        return nil
    }

    /// The namespace called `name` (which may or may not exist).
    public init(name: String) {
        self.name = name
    }

    /// Creates namespace `name` with its loopback up.
    public static func create(_ name: String) throws -> NetworkNamespace {
        try Self.ip(["netns", "add", name])
        let namespace = NetworkNamespace(name: name)
        try namespace.ip(["link", "set", "lo", "up"])
        return namespace
    }

    /// Runs `ip ARGUMENTS` (no namespace); throws with its output if it fails.
    public static func ip(_ arguments: [String]) throws {
        let (status, output) = try HuddleCluster.run(ip, arguments)
        guard status == 0 else {
            throw HuddleProcessError.commandFailed("ip \(arguments.joined(separator: " ")): \(output)")
        }
    }

    /// Runs `ip -n NAME ARGUMENTS`.
    public func ip(_ arguments: [String]) throws {
        try Self.ip(["-n", name] + arguments)
    }

    /// Runs `nft ARGUMENTS` inside the namespace.
    public func nft(_ arguments: [String]) throws {
        let (status, output) = try HuddleCluster.run(Self.ip, ["netns", "exec", name, Self.nft] + arguments)
        guard status == 0 else {
            throw HuddleProcessError.commandFailed("nft \(arguments.joined(separator: " ")) in \(name): \(output)")
        }
    }

    /// Waits until something in the namespace listens on `port` over each of `transports` (`udp`, `tcp`), as `ss`
    /// lists sockets, for at most 5 s; whether it did.
    public func waitUntilListening(on port: UInt16, over transports: [String]) throws -> Bool {
        for _ in 0..<50 {
            // Both -t and -u: only then does ss print each socket's netid column (udp, tcp).
            let (_, sockets) = try HuddleCluster.run(
                Self.ip, ["netns", "exec", name, "ss", "-H", "-lntu", "sport = :\(port)"])
            if transports.allSatisfy({ sockets.contains($0) }) { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    /// Stops a server process these tests started (idempotent). SIGKILL: a child of a Dispatch thread inherits
    /// its blocked signals, SIGTERM among them, and the servers these tests run keep nothing worth a clean exit.
    public static func stop(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Deletes the namespace (its interfaces go with it); errors are ignored so cleanup always runs to the end.
    public func delete() {
        _ = try? HuddleCluster.run(Self.ip, ["netns", "delete", name])
    }
}
