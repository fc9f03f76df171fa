import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Path MTU discovery on a real path: two `huddle` processes in network namespaces on one bridge, where ada's link
/// (her veth and its bridge port) has a 1400-byte MTU and the host's the usual 1500. Both directions fail
/// differently: ada's larger datagrams are refused by her own kernel (EMSGSIZE, don't-fragment set), the host's are
/// dropped silently by the bridge on the way. Both sides must settle on 1372 bytes of UDP payload (1400 minus the
/// IPv4 and UDP headers), and messages several datagrams long must still arrive.
@Suite(
    "Path MTU discovery across network namespaces",
    .enabled(if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? ""))
)
struct PathMTUTests {
    static let port = 7100
    static let names = ["host", "ada"]

    @Test(
        "Both ends of a 1400-byte-MTU path settle on 1372-byte datagrams and long messages arrive",
        .timeLimit(.minutes(2)), arguments: [false, true])
    func settlesOnPathSize(dualStack: Bool) async throws {
        // With `dualStack`, ada listens on [::] and reaches the host over IPv4 from her IPv6 socket: that traffic
        // follows the socket's IPv4 don't-fragment setting, not the IPv6 one.
        let tag = "\(getpid())-\(UInt32.random(in: 0..<1_000_000))"
        let lab = try LossyLinkTests.Lab.build(nodes: Self.names.count, tag: tag)
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        try lab.hosts[1].ip(["link", "set", "eth0", "mtu", "1400"])
        try lab.bridge?.ip(["link", "set", "port1", "mtu", "1400"])
        try await withDeadline(seconds: 90) {
            let listen = { (index: Int) in "\(lab.address(index)):\(Self.port)" }
            let (host, ticket) = try await cluster.host(Self.names[0], listen: listen(0), namespace: lab.hosts[0].name)
            let ada = try cluster.join(
                ticket, as: Self.names[1], listen: dualStack ? "[::]:\(Self.port)" : listen(1),
                namespace: lab.hosts[1].name, extra: dualStack ? ["--advertise", listen(1)] : [])
            try await ada.waitForEvent("joined", within: 40)
            let processes = [host, ada]
            for process in processes { try await process.waitForPeerCount(1) }
            // Lines of 4,000 characters: four datagrams each at the path's size.
            let lines = (0..<10).map { index in String(repeating: Character(UnicodeScalar(97 + index)!), count: 4_000) }
            for line in lines { try host.send(line) }
            let received = { ada.events.filter { $0.name == "message" }.compactMap { $0["text"] } }
            try await ada.waitForEvent("10 long lines", within: 30) { _ in received().count >= lines.count }
            #expect(received() == lines)
            // Discovery needs a few probe timeouts per size that fails: wait until both report 1372.
            for (index, process) in processes.enumerated() {
                var size = ""
                for _ in 0..<40 {
                    size = try await Self.datagramSize(of: process)
                    if size == "1372" { break }
                    try await Task.sleep(for: .milliseconds(250))
                }
                #expect(size == "1372", "\(Self.names[index]) reports \(size)-byte datagrams")
                print(
                    "netns: \(Self.names[index]) settled on \(size)-byte datagrams over the 1400-byte-MTU path"
                        + (dualStack ? " (ada on a dual-stack socket)" : ""))
            }
            for process in processes { process.closeInput() }
            for process in processes {
                #expect(try await process.waitForExit(within: 15) == 0, "\(process.label) exits cleanly")
            }
        }
    }

    /// The datagram size `process` reports for its one peer in `/peers`.
    static func datagramSize(of process: HuddleProcess) async throws -> String {
        let before = process.events.count
        try process.send("/peers")
        try await process.waitForEvent("answer to /peers") { _ in
            process.events.dropFirst(before).contains { $0.name == "peers" }
        }
        return process.events.dropFirst(before).first { $0.name == "peer" }?["datagram_size"] ?? "none"
    }
}
