import Foundation
import HuddleCLITestSupport
import Testing

/// Issue 34: many `huddle` processes on one address (loopback) join one session one after another through the host's
/// ticket, and every member hears every other member's line: the full mesh forms. `HUDDLE_MESH_MEMBERS` (32) and
/// `HUDDLE_MESH_RUNS` (2) size it; `make mesh` runs 48 members 20 times against the release build
/// (`scripts/mesh.py`).
@Suite("Many huddle processes form the full mesh", .serialized)
struct MeshProcessTests {
    static let members = ProcessInfo.processInfo.environment["HUDDLE_MESH_MEMBERS"].flatMap { Int($0) } ?? 32
    static let runs = ProcessInfo.processInfo.environment["HUDDLE_MESH_RUNS"].flatMap { Int($0) } ?? 2

    @Test(
        "The mesh completes; every member hears every other; nobody is reported unreachable or undelivered",
        arguments: 1...runs)
    func fullMesh(run: Int) async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (host, ticket) = try await cluster.host("m0")
        var nodes = [host]
        let clock = ContinuousClock()
        var joinTimes: [Duration] = []
        for index in 1..<Self.members {
            let started = clock.now
            let node = try cluster.join(ticket, as: "m\(index)")
            try await node.waitForEvent("joined", within: TestTiming.seconds(40))
            joinTimes.append(clock.now - started)
            nodes.append(node)
        }
        // A line reaches the participants its sender knows when it sends it (GroupSessionMessenger's rule), so each
        // member first waits until it has a connection to every other: the mesh is complete.
        let expected = Self.members - 1
        let meshStarted = clock.now
        for node in nodes { try await node.waitForPeerCount(expected, within: TestTiming.seconds(60)) }
        let meshTime = clock.now - meshStarted
        for (index, node) in nodes.enumerated() { try node.send("line from m\(index)") }
        let heardAll = try? await host.poll("every member hears every other", within: TestTiming.seconds(60)) {
            nodes.allSatisfy { node in node.events.filter { $0.name == "message" }.count >= expected } ? true : nil
        }
        #expect(heardAll == true, "not every member heard every other within 60 s")
        for (index, node) in nodes.enumerated() {
            let heard = Set(node.events.filter { $0.name == "message" }.compactMap { $0["text"] })
            let missing = (0..<Self.members).filter { $0 != index && !heard.contains("line from m\($0)") }
            #expect(missing.isEmpty, "m\(index) missed the lines of \(missing.map { "m\($0)" })")
            let trouble = node.events.filter { ["participant-left", "undelivered"].contains($0.name) }
            #expect(trouble.isEmpty, "m\(index): \(trouble)")
        }
        joinTimes.sort()
        print(
            "mesh run \(run): \(Self.members) members, join p50 \(joinTimes[joinTimes.count / 2]), "
                + "max \(joinTimes.last!); full mesh \(meshTime) after the last join")
        for node in nodes { node.closeInput() }
        for node in nodes { _ = try? await node.waitForExit(within: 15) }
    }
}
