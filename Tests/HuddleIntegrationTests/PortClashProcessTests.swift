import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Issue 33: a UDP port another socket holds is refused, never shared. Before, the direct-send socket and SwiftNIO's
/// bootstrap set SO_REUSEADDR, so a second `huddle host --listen` on a busy port printed a ticket and then took part
/// of the first host's datagrams: every join of the first host's ticket hung.
@Suite("A port in use is refused")
struct PortClashProcessTests {
    /// A UDP port that is free now on 127.0.0.1 (bound and released by this test).
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        #expect(bound == 0)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs `arguments` to its exit with standard input closed and checks the refusal: exit 1, one `error:` line on
    /// stderr naming the port and `holder`, and with `--json` one `error` event with code `address-in-use`.
    static func expectRefused(
        _ cluster: HuddleCluster, _ arguments: [String], port: Int, holder: HuddleProcess, json: Bool
    ) async throws {
        let process = try cluster.start(arguments[0], arguments)
        process.closeInput()
        let status = try await process.waitForExit(within: 20)
        let what = arguments.joined(separator: " ")
        #expect(status == 1, "\(what): exit status")
        // One error line (a fresh identity file's "created identity" note may come before it).
        let errors = process.stderrLines.filter { $0.hasPrefix("error: ") }
        #expect(errors.count == 1, "\(what): \(process.stderrLines)")
        let line = errors.first ?? ""
        #expect(line.contains("UDP port \(port) on 127.0.0.1 is already in use"), "\(what): \(line)")
        // Root (as CI runs) sees every process; the holder is named by its command and pid.
        if getuid() == 0 { #expect(line.contains("by huddle (pid \(holder.pid))"), "\(what): \(line)") }
        if json {
            #expect(process.events.count == 1, "\(what): \(process.events)")
            #expect(process.events.first?.name == "error" && process.events.first?["code"] == "address-in-use")
        } else {
            #expect(process.stdoutLines.isEmpty, "\(what): \(process.stdoutLines)")
        }
    }

    @Test(
        "host, join, relay and bench serve on a port a host holds exit 1 naming it; its ticket works",
        .timeLimit(.minutes(2)))
    func busyPortIsRefused() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let port = try Self.freePort()
        let listen = "127.0.0.1:\(port)"
        let (holder, ticket) = try await cluster.host("holder", listen: listen)
        try await Self.expectRefused(
            cluster, ["host", "--name", "second", "--identity", cluster.identityPath("second"), "--listen", listen],
            port: port, holder: holder, json: false)
        try await Self.expectRefused(
            cluster,
            ["host", "--json", "--name", "third", "--identity", cluster.identityPath("third"), "--listen", listen],
            port: port, holder: holder, json: true)
        try await Self.expectRefused(
            cluster,
            [
                "join", ticket, "--json", "--name", "joiner", "--identity", cluster.identityPath("joiner"),
                "--listen", listen,
            ],
            port: port, holder: holder, json: true)
        try await Self.expectRefused(
            cluster, ["relay", "--json", "--listen", listen], port: port, holder: holder, json: true)
        try await Self.expectRefused(
            cluster, ["bench", "serve", "--listen", listen], port: port, holder: holder, json: false)
        // Nothing took part of the holder's port: a join of its ticket completes (it hung before).
        let guest = try cluster.join(ticket, as: "guest")
        _ = try await guest.waitForEvent("joined", within: 20)
        guest.closeInput()
        #expect(try await guest.waitForExit(within: 20) == 0)
        holder.closeInput()
        #expect(try await holder.waitForExit(within: 20) == 0)
    }

    @Test("A relay holding a port refuses a second relay on it", .timeLimit(.minutes(1)))
    func busyRelayPortIsRefused() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let port = try Self.freePort()
        let relay = try cluster.start("relay", ["relay", "--json", "--listen", "127.0.0.1:\(port)"])
        _ = try await relay.waitForEvent("relay-listening", within: 20)
        try await Self.expectRefused(
            cluster, ["relay", "--listen", "127.0.0.1:\(port)"], port: port, holder: relay, json: false)
        relay.stop()
    }
}
