import Foundation
import HuddleCLITestSupport
import Testing

/// Issue 40: a session between `huddle` of an earlier commit and this tree's. Users upgrade one machine at a time, so
/// mixed versions are the normal case. Runs only with `HUDDLE_OLD_EXECUTABLE` set: `make cross-version`
/// (`scripts/cross-version.sh`) builds the earlier binary and sets it, with `HUDDLE_EXECUTABLE` the current one.
@Suite(
    "An earlier huddle and this one share a session",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["HUDDLE_OLD_EXECUTABLE"] != nil))
struct CrossVersionProcessTests {
    static var old: String { ProcessInfo.processInfo.environment["HUDDLE_OLD_EXECUTABLE"] ?? "" }

    /// `hostBinary` hosts, `joinerBinary` joins (`nil`: this tree's); chat both ways and an attachment each way.
    static func session(hostBinary: String?, joinerBinary: String?) async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        try #require(old != cluster.executable, "HUDDLE_OLD_EXECUTABLE names the current huddle")
        let (host, ticket) = try await cluster.host("host", binary: hostBinary)
        let ada = try cluster.join(ticket, as: "ada", binary: joinerBinary)
        try await ada.waitForEvent("joined", within: 35)
        try await host.waitForPeerCount(1)
        try await ada.waitForPeerCount(1)

        try host.send("from the host")
        try ada.send("from ada")
        try await ada.waitForEvent("message", ["name": "host", "text": "from the host"], within: 10)
        try await host.waitForEvent("message", ["name": "ada", "text": "from ada"], within: 10)

        // An attachment each way, verified at the other end (1 MiB: 16 chunks, several Merkle levels).
        for (author, reader, file) in [(host, ada, "by-host.bin"), (ada, host, "by-ada.bin")] {
            let path = try AttachmentProcessTests.makeFile(file, size: 1 << 20, in: cluster.directory)
            try author.send("/share \(path)")
            let shared = try await author.waitForEvent("attachment-shared", within: 20)
            let id = try #require(shared["id"])
            let hash = try #require(try await author.waitForEvent("attachment-complete", ["id": id])["blake2b"])
            let complete = try await reader.waitForEvent("attachment-complete", ["id": id], within: 30)
            #expect(complete["blake2b"] == hash, "\(file)")
        }
        for process in [host, ada] {
            let trouble = process.events.filter {
                ["undelivered", "messages-dropped", "error", "participant-unresponsive"].contains($0.name)
            }
            #expect(trouble.isEmpty, "\(trouble)")
        }
        ada.closeInput()
        #expect(try await ada.waitForExit(within: 15) == 0)
        try await host.waitForEvent("participant-left", ["name": "ada", "reason": "left"], within: 10)
        host.closeInput()
        #expect(try await host.waitForExit(within: 15) == 0)
    }

    @Test("The earlier huddle hosts, this one joins: chat both ways, an attachment each way, a clean leave")
    func oldHosts() async throws {
        try await Self.session(hostBinary: Self.old, joinerBinary: nil)
    }

    @Test("This huddle hosts, the earlier one joins: the same")
    func newHosts() async throws {
        try await Self.session(hostBinary: nil, joinerBinary: Self.old)
    }
}
