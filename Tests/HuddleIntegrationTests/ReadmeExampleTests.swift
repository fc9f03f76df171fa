import Foundation
import HuddleCLITestSupport
import Testing

/// The README's example is a whole program (`readme-snippets`, its Swift blocks verbatim): it must run as written.
@Suite("The README's example")
struct ReadmeExampleTests {
    @Test("It runs to completion on its own: ben joins, both messages arrive, ana sees ben leave")
    func runsAsWritten() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let program = URL(fileURLWithPath: cluster.executable).deletingLastPathComponent()
            .appendingPathComponent("readme-snippets").path
        try #require(
            FileManager.default.isExecutableFile(atPath: program), "build it with swift build --build-tests")
        let example = try HuddleProcess(label: "readme", executable: program, arguments: [], environment: [:])
        defer { example.stop() }
        #expect(try await example.waitForExit(within: TestTiming.seconds(30)) == 0, "\(example.stderrLines)")
        let lines = example.stdoutLines
        #expect(lines.contains { $0.hasPrefix("ana's ticket: huddle:") }, "\(lines)")
        #expect(lines.contains("ben received [0.0, 1.0, 2.0] from ana"), "\(lines)")
        #expect(lines.contains("ana received [3.0, 4.0] from ben"), "\(lines)")
        #expect(lines.contains("ana saw ben go: left"), "\(lines)")
    }
}
