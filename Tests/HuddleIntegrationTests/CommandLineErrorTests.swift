import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Bad input to `huddle`: one line on standard error, a documented exit code, no crash, and with `--json` nothing on
/// standard output but one `error` event.
@Suite("huddle command-line errors")
struct CommandLineErrorTests {
    /// What a finished process printed.
    struct Finished {
        var status: Int32
        var stdout: [String]
        var stderr: [String]
        var events: [Event]
    }

    /// Runs `huddle ARGUMENTS` with standard input closed, until it exits.
    static func run(
        _ cluster: HuddleCluster, _ arguments: [String], within seconds: Double = 20
    ) async throws -> Finished {
        let process = try cluster.start(arguments.first ?? "huddle", arguments)
        process.closeInput()
        let status = try await process.waitForExit(within: seconds)
        return Finished(
            status: status, stdout: process.stdoutLines, stderr: process.stderrLines, events: process.events)
    }

    /// Expects a clean failure: `status`, exactly one `error:` line on stderr, and with `--json` exactly one stdout
    /// line, an `error` event with `code` (without `--json`, empty stdout).
    static func expectFailure(
        _ finished: Finished, status: Int32, code: String?, json: Bool, _ what: String
    ) {
        #expect(finished.status == status, "\(what): exit status")
        #expect(finished.stderr.count == 1, "\(what): stderr \(finished.stderr)")
        #expect(finished.stderr.first?.hasPrefix("error: ") == true, "\(what): stderr \(finished.stderr)")
        if json {
            #expect(finished.stdout.count == 1, "\(what): stdout \(finished.stdout)")
            #expect(finished.events.count == 1 && finished.events.first?.name == "error", "\(what): \(finished.events)")
            if let code { #expect(finished.events.first?["code"] == code, "\(what): \(finished.events)") }
        } else {
            #expect(finished.stdout.isEmpty, "\(what): stdout \(finished.stdout)")
        }
    }

    @Test("Damaged, foreign and expired tickets: exit 2, one error line, no node started", .timeLimit(.minutes(1)))
    func badTickets() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (host, ticket) = try await cluster.host("host")
        let (_, expired) = try await cluster.host("expiring", extra: ["--ticket-lifetime", "0"])
        host.closeInput()

        // One character changed in the middle of a real ticket: the checksum catches it.
        var characters = Array(ticket)
        let middle = characters.count / 2
        characters[middle] = characters[middle] == "A" ? "B" : "A"
        let damaged = String(characters)
        let cases: [(String, String, String)] = [
            ("damaged", damaged, "bad-ticket"),
            ("truncated", String(ticket.prefix(ticket.count - 5)), "bad-ticket"),
            ("garbage", "huddle:garbage", "bad-ticket"),
            ("foreign", "https://example.invalid/join", "bad-ticket"),
            ("expired", expired, "ticket-expired"),
        ]
        for (what, text, code) in cases {
            for json in [true, false] {
                let identity = cluster.identityPath("joiner-\(what)-\(json)")
                let finished = try await Self.run(
                    cluster, ["join", text, "--identity", identity, "--name", "joiner"] + (json ? ["--json"] : []))
                Self.expectFailure(finished, status: 2, code: code, json: json, "\(what) ticket (json: \(json))")
                // The ticket is refused before the node starts: not even the identity file is created.
                #expect(!FileManager.default.fileExists(atPath: identity), "\(what): identity created")
            }
        }
        #expect(try await host.waitForExit() == 0)
    }

    @Test(
        "Joining through a member that is gone: exit 3 with a join-timeout error after about 30 s",
        .enabled(
            if: ProcessInfo.processInfo.environment["HUDDLE_SLOW_TESTS"] == "1",
            "slow (waits out the 30 s join timeout): set HUDDLE_SLOW_TESTS=1"),
        .timeLimit(.minutes(2)))
    func unreachableMember() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (host, ticket) = try await cluster.host("host")
        host.signal(SIGKILL)
        _ = try await host.waitForExit()
        // The identity exists beforehand, so the only stderr line is the error (not "created identity ...").
        #expect(try await Self.run(cluster, ["id", "--identity", cluster.identityPath("late")]).status == 0)
        let clock = ContinuousClock()
        let started = clock.now
        let finished = try await Self.run(
            cluster, ["join", ticket, "--json", "--identity", cluster.identityPath("late"), "--name", "late"],
            within: 60)
        let elapsed = clock.now - started
        Self.expectFailure(finished, status: 3, code: "join-timeout", json: true, "join through a dead member")
        #expect(elapsed >= .seconds(29) && elapsed <= .seconds(40), "gave up after \(elapsed)")
        print("join through a dead member failed after \(elapsed)")
    }

    @Test("Damaged, too-open and unreachable identity files: one error line, non-zero exit", .timeLimit(.minutes(1)))
    func badIdentityFiles() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let directory = cluster.directory
        func write(_ name: String, _ bytes: [UInt8], mode: mode_t) -> String {
            let path = "\(directory)/\(name)"
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            chmod(path, mode)
            return path
        }
        // A real identity, for a truncated and a too-open copy.
        let good = "\(directory)/good.identity"
        let created = try await Self.run(cluster, ["id", "--identity", good])
        #expect(created.status == 0 && created.stdout.count == 1, "huddle id: \(created.stdout) \(created.stderr)")
        let goodBytes = Array(FileManager.default.contents(atPath: good) ?? Data())
        #expect(!goodBytes.isEmpty)
        let blocker = write("plain-file", [1], mode: 0o600)
        let cases: [(String, String)] = [
            ("garbage", write("garbage.identity", Array("not an identity\n".utf8), mode: 0o600)),
            ("empty", write("empty.identity", [], mode: 0o600)),
            ("truncated", write("truncated.identity", Array(goodBytes.prefix(goodBytes.count / 2)), mode: 0o600)),
            ("too open", write("open.identity", goodBytes, mode: 0o644)),
            ("directory cannot be made", "\(blocker)/sub/identity"),
            ("a directory", directory),
        ]
        for (what, path) in cases {
            let hosted = try await Self.run(cluster, ["host", "--json", "--identity", path, "--name", "h"])
            Self.expectFailure(hosted, status: 1, code: "start-failed", json: true, "host, \(what) identity")
            let joined = try await Self.run(cluster, ["join", "huddle:garbage", "--identity", path])
            #expect(joined.status == 2, "join checks the ticket first (\(what))")
            let shown = try await Self.run(cluster, ["id", "--identity", path])
            Self.expectFailure(shown, status: 1, code: nil, json: false, "id, \(what) identity")
        }
        // A missing directory that can be made is made (0700), with the identity in it (0600).
        let fresh = "\(directory)/new/nested/identity"
        let made = try await Self.run(cluster, ["id", "--identity", fresh])
        #expect(made.status == 0, "\(made.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: fresh)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let parent = try FileManager.default.attributesOfItem(atPath: "\(directory)/new/nested")
        #expect((parent[.posixPermissions] as? Int) == 0o700)
    }
}
