import Foundation
import HuddleCLITestSupport
import Testing

/// docs/cli-events.schema.json against what `huddle` prints: a session that goes through most of the chat's events
/// (joins, messages, /peers, /share and /ls, /invite, an unknown command, /revoke, an ask-to-join request denied, a
/// removal, leaving) and every `--json` line
/// of every process checked against the schema, which must also list the events README.md documents.
@Suite("The --json event schema")
struct CLIEventSchemaTests {
    @Test("Every --json line of a host and two joiners matches docs/cli-events.schema.json", .timeLimit(.minutes(2)))
    func outputMatchesSchema() async throws {
        let schema = try EventSchema.load()
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let members = try await ChatProcessTests.chat(cluster, joiners: ["ada", "bob"])
        let (host, ada, bob) = (members["host"]!.process, members["ada"]!.process, members["bob"]!.process)
        let file = "\(cluster.directory)/shared.txt"
        try Data("shared with everyone\n".utf8).write(to: URL(fileURLWithPath: file))
        try host.send("/share \(file)")
        try await ada.waitForEvent("attachment-complete", within: 20)
        try ada.send("hello")
        try await host.waitForEvent("message", ["name": "ada"])
        for command in ["/peers", "/ls", "/invite", "/help", "/nonsense"] { try host.send(command) }
        try await host.waitForEvent("error", ["code": "unknown-command"])
        let tickets = try await host.poll("a second ticket", within: 10) {
            let printed = host.events.filter { $0.name == "ticket" }.compactMap { $0["ticket"] }
            return printed.count >= 2 ? printed : nil
        }
        try ada.send("/revoke \(tickets[1])")
        try await ada.waitForEvent("invitation-revoked", within: 10)
        // Someone asks to join and is turned away: the request, its answer, and the joiner's waiting and exit.
        try host.send("/invite ask once")
        let ask = try await host.poll("an ask-to-join ticket", within: 10) {
            host.events.first { $0.name == "ticket" && $0["ask_to_join"] == "true" }?["ticket"]
        }
        let cara = try cluster.join(ask, as: "cara")
        try await ada.waitForEvent("join-request", ["name": "cara"], within: 20)
        try ada.send("/deny cara")
        #expect(try await cara.waitForExit(within: 20) == 5)
        try await host.waitForEvent("join-request-answered", ["name": "cara"], within: 10)
        try host.send("/remove bob")
        #expect(try await bob.waitForExit(within: 15) == 4)
        try await ada.waitForEvent("participant-removed", within: 10)
        ada.closeInput()
        #expect(try await ada.waitForExit() == 0)
        host.closeInput()
        #expect(try await host.waitForExit() == 0)

        var seen = Set<String>()
        for process in [host, ada, bob, cara] {
            for line in process.stdoutLines where !line.isEmpty {
                let problems = schema.violations(of: line)
                #expect(problems.isEmpty, "\(process.label): \(problems)")
                seen.insert(Event(parsing: line)?.name ?? "")
            }
        }
        // The run is worth something only if it reached most of the chat's events.
        for name in [
            "ticket", "joined", "participant-joined", "message", "peer", "peers", "attachment-shared",
            "attachment-added", "attachment-complete", "attachment", "attachments", "help", "error",
            "participant-removed", "removed", "left", "invitation-revoked", "join-request", "join-request-answered",
            "waiting",
        ] {
            #expect(seen.contains(name), "no \(name) event was printed")
        }
    }

    @Test("The schema lists exactly the events README.md documents")
    func schemaMatchesReadme() throws {
        let schema = try EventSchema.load()
        let readme = try String(
            contentsOfFile: URL(fileURLWithPath: EventSchema.path).deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("README.md").path, encoding: .utf8)
        // Table rows of the events section: "| `name` | ..." or "| `a`, then `b` | ...".
        var documented = Set<String>()
        for line in readme.split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            for part in cell.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            where part.offset % 2 == 1 {
                let name = String(part.element)
                if name.range(of: "^[a-z]+(-[a-z]+)*$", options: .regularExpression) != nil { documented.insert(name) }
            }
        }
        let missing = Set(schema.events.keys).subtracting(documented)
        #expect(missing.isEmpty, "in the schema, not in README.md: \(missing.sorted())")
    }
}
