import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// `GroupStateObserver` on a real interface: two `huddle` processes in network namespaces on one bridge; taking a
/// node's interface down and up again flips its eligibility (the `eligibility` event of `--json`), for a node bound
/// to its address and for one bound to `0.0.0.0`, and the session carries on once the path is back.
@Suite(
    "Eligibility as interfaces go down and up",
    .enabled(if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? ""))
)
struct EligibilityTests {
    static let port = 7200

    /// Takes `namespace`'s interface down and up, checking that `process` reports each change.
    static func flip(_ process: HuddleProcess, interfaceOf namespace: NetworkNamespace) async throws {
        let reports = { process.events.filter { $0.name == "eligibility" }.compactMap { $0["eligible"] } }
        let before = reports().count
        try namespace.ip(["link", "set", "eth0", "down"])
        try await process.waitForEvent("\(process.label) not eligible", within: 10) { _ in reports().count > before }
        #expect(Array(reports().dropFirst(before)) == ["false"], "\(process.label)")
        try namespace.ip(["link", "set", "eth0", "up"])
        try await process.waitForEvent("\(process.label) eligible again", within: 10) { _ in
            reports().count > before + 1
        }
        #expect(Array(reports().dropFirst(before)) == ["false", "true"], "\(process.label)")
    }

    @Test("A node's eligibility follows its interface, bound to one address or to all", .timeLimit(.minutes(2)))
    func followsTheInterface() async throws {
        let tag = "\(getpid())-\(UInt32.random(in: 0..<1_000_000))"
        let lab = try LossyLinkTests.Lab.build(nodes: 2, tag: tag)
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        try await withDeadline(seconds: 90) {
            let (host, ticket) = try await cluster.host(
                "host", listen: "\(lab.address(0)):\(Self.port)", namespace: lab.hosts[0].name)
            let ada = try cluster.join(
                ticket, as: "ada", listen: "0.0.0.0:\(Self.port)", namespace: lab.hosts[1].name,
                extra: ["--advertise", "\(lab.address(1)):\(Self.port)"])
            try await ada.waitForEvent("joined", within: 40)
            try await host.waitForPeerCount(1)
            // Eligible from the start: no event (only changes and a start without a path are reported).
            #expect(
                !host.events.contains { $0.name == "eligibility" } && !ada.events.contains { $0.name == "eligibility" })

            try await Self.flip(ada, interfaceOf: lab.hosts[1])
            try await Self.flip(host, interfaceOf: lab.hosts[0])
            // The session outlived both outages (each far shorter than the 30 s idle timeout).
            try host.send("still here")
            try await ada.waitForEvent("message", ["text": "still here"], within: 20)
        }
    }
}
