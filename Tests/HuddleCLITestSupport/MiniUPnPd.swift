import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's `miniupnpd` (installed by `make deps`, with its nftables backend) serving PCP, NAT-PMP and UPnP-IGD (or
/// some of them) on
/// a router namespace's `lan` interface for one test, with `wan` as the external interface. It refuses to map when
/// `wan`'s address is private (it cannot be reached from outside), so a lab that runs it gives `wan` a
/// public-looking address. Mappings are allowed for ports 1024-65535 of 192.168/16 hosts, each only to itself
/// (`secure_mode`). Stopped by ``stop()`` (or when the object goes away).
public final class MiniUPnPd: @unchecked Sendable {
    public static let executable = "/usr/sbin/miniupnpd"
    /// The nftables table its rules go in (family inet); ``forwardedPorts()`` reads its `prerouting_upnp` chain.
    public static let table = "miniupnpd"

    /// The router namespace it runs in.
    public let namespace: NetworkNamespace
    private let process = Process()
    private let directory: URL

    /// Whether miniupnpd is installed here.
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// Creates its nftables chains in `router` and starts it, answering PCP and NAT-PMP when `natPMP` (one switch
    /// for both) and UPnP-IGD when `upnp`; waits until it listens (at most 5 s).
    public init(router: NetworkNamespace, natPMP: Bool = true, upnp: Bool = true) throws {
        namespace = router
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("miniupnpd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let rules = """
            table inet \(Self.table) {
              chain forward { type filter hook forward priority 0; policy accept; jump forward_upnp; }
              chain forward_upnp { }
              chain prerouting { type nat hook prerouting priority dstnat; policy accept; jump prerouting_upnp; }
              chain postrouting { type nat hook postrouting priority srcnat; policy accept; jump postrouting_upnp; }
              chain prerouting_upnp { }
              chain postrouting_upnp { }
            }

            """
        let rulesFile = directory.appendingPathComponent("tables.nft")
        try rules.write(to: rulesFile, atomically: true, encoding: .utf8)
        try router.nft(["-f", rulesFile.path])
        let configuration = """
            ext_ifname=wan
            listening_ip=lan
            enable_natpmp=\(natPMP ? "yes" : "no")
            enable_upnp=\(upnp ? "yes" : "no")
            secure_mode=yes
            system_uptime=yes
            uuid=\(UUID().uuidString.lowercased())
            lease_file=\(directory.appendingPathComponent("leases").path)
            upnp_table_name=\(Self.table)
            upnp_nat_table_name=\(Self.table)
            upnp_forward_chain=forward_upnp
            upnp_nat_chain=prerouting_upnp
            upnp_nat_postrouting_chain=postrouting_upnp
            allow 1024-65535 192.168.0.0/16 1024-65535
            deny 0-65535 0.0.0.0/0 0-65535

            """
        let configurationFile = directory.appendingPathComponent("miniupnpd.conf")
        try configuration.write(to: configurationFile, atomically: true, encoding: .utf8)
        let logFile = directory.appendingPathComponent("log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: NetworkNamespace.ip)
        // -d: in the foreground, logging to standard error; -P: its own pid file (one per router).
        process.arguments = [
            "netns", "exec", router.name, Self.executable, "-d", "-f", configurationFile.path, "-P",
            directory.appendingPathComponent("pid").path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: logFile)
        try process.run()
        // PCP and NAT-PMP listen on 5351, SSDP on 1900.
        if try router.waitUntilListening(on: natPMP ? 5351 : 1900, over: ["udp"]) { return }
        stop()
        throw MiniUPnPdError.notListening(log: log)
    }

    /// What it logged so far (for a failing test's message).
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("log"), encoding: .utf8)) ?? ""
    }

    /// The external UDP ports it forwards now, read from its nftables chain.
    public func forwardedPorts() throws -> [UInt16] {
        let (_, listing) = try HuddleCluster.run(
            NetworkNamespace.ip,
            ["netns", "exec", namespace.name, "nft", "list", "chain", "inet", Self.table, "prerouting_upnp"])
        return listing.split(separator: "\n").compactMap { line in
            // `iif "wan" @nh,72,8 0x11 th dport 7000 dnat ip to 192.168.11.2:7000` (0x11: UDP)
            guard line.contains("0x11"),
                let port = line.split(separator: " ").drop(while: { $0 != "dport" })
                    .dropFirst().first
            else { return nil }
            return UInt16(port)
        }
    }

    /// Waits up to `seconds` for the UDP ports forwarded to become `ports`, and returns the last listing: miniupnpd
    /// is a process of its own, and a request that reached its socket (a node's deletion at exit) takes effect when
    /// it gets to it, which under load is after the node is gone.
    public func forwardedPorts(becoming ports: [UInt16], within seconds: Double = 3) async throws -> [UInt16] {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        while true {
            let current = try forwardedPorts()
            if current == ports || clock.now >= deadline { return current }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Stops it (idempotent).
    public func stop() {
        NetworkNamespace.stop(process)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// Why a ``MiniUPnPd`` did not start.
public enum MiniUPnPdError: Error {
    /// It did not listen within 5 s; what it logged.
    case notListening(log: String)
}
