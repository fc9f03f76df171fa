import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Local network discovery between namespaces on one bridge (multicast crosses a Linux bridge): a host announces its
/// session under a name, `huddle discover` on another machine lists it, and `huddle join --lan NAME` joins with no
/// ticket passed around.
@Suite(
    "Local network discovery across network namespaces",
    .enabled(if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? ""))
)
struct LocalDiscoveryTests {
    static let port = 7300

    @Test(
        "discover lists an announced session; join --lan joins it; an unknown name is not found; --watch sees it go",
        .timeLimit(.minutes(2)))
    func discoverAndJoin() async throws {
        let tag = "\(getpid())-\(UInt32.random(in: 0..<1_000_000))"
        let lab = try LossyLinkTests.Lab.build(nodes: 3, tag: tag)
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        try await withDeadline(seconds: 90) {
            // The host listens on all addresses (beacons go out of every multicast interface).
            let (host, _) = try await cluster.host(
                "host", listen: "0.0.0.0:\(Self.port)", namespace: lab.hosts[0].name,
                extra: ["--advertise", "\(lab.address(0)):\(Self.port)", "--lan", "Ana's canvas"])
            let announcing = try await host.waitForEvent("announcing", within: 10)
            #expect(announcing["name"] == "Ana's canvas")

            let discover = try cluster.start(
                "discover", ["discover", "--json", "--seconds", "3"], namespace: lab.hosts[1].name)
            #expect(try await discover.waitForExit(within: 15) == 0)
            let heard = discover.events.filter { $0.name == "nearby" }
            #expect(heard.count == 1, "\(discover.events)")
            #expect(heard.first?["name"] == "Ana's canvas" && heard.first?["inviter"] == "host")
            #expect(heard.first?["address"]?.hasPrefix("\(lab.address(0)):") == true, "\(heard)")

            let ada = try cluster.start(
                "ada",
                [
                    "join", "--lan", "Ana's canvas", "--json", "--name", "ada", "--identity",
                    cluster.identityPath("ada"), "--listen", "\(lab.address(1)):\(Self.port)",
                ], namespace: lab.hosts[1].name)
            try await ada.waitForEvent("joined", within: 40)
            try await host.waitForPeerCount(1)
            try host.send("hello nearby")
            try await ada.waitForEvent("message", ["text": "hello nearby"], within: 10)

            // A name nobody announces: exit 2 with a reason, after the timeout.
            let missing = try cluster.start(
                "bob",
                [
                    "join", "--lan", "nobody's", "--lan-timeout", "2", "--json", "--name", "bob", "--identity",
                    cluster.identityPath("bob"), "--listen", "\(lab.address(2)):\(Self.port)",
                ], namespace: lab.hosts[2].name)
            #expect(try await missing.waitForExit(within: 15) == 2)
            #expect(missing.events.contains { $0.name == "error" && $0["code"] == "lan-not-found" })

            // Watching: the session is listed while announced, and reported gone within a few seconds of the host
            // leaving (its announcement stops with its part in the session).
            let watcher = try cluster.start(
                "watcher", ["discover", "--watch", "--json", "--seconds", "20"], namespace: lab.hosts[2].name)
            let listed = try await watcher.waitForEvent("nearby", within: 10)
            #expect(listed["name"] == "Ana's canvas")
            let clock = ContinuousClock()
            let left = clock.now
            try host.send("/leave")
            let gone = try await watcher.waitForEvent("nearby-gone", within: 10)
            #expect(gone["name"] == "Ana's canvas")
            // 3 s without a beacon, plus up to one beacon interval and the leave itself: about 4-5 s alone. The bound
            // leaves room for the suite's parallel load (a full run measured 6.3 s once); what it rules out is the
            // listing outliving the host until its ticket expires (10 minutes).
            #expect(clock.now - left < .seconds(9), "reported gone after \(clock.now - left)")
            watcher.stop()

            // Nothing is announced any more: discover says so, rather than exiting 0 in silence.
            let empty = try cluster.start(
                "empty", ["discover", "--json", "--seconds", "2"], namespace: lab.hosts[1].name)
            #expect(try await empty.waitForExit(within: 15) == 2)
            #expect(empty.events.map(\.name) == ["waiting", "nothing-found"], "\(empty.events)")
        }
    }
}
