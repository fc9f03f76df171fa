import Foundation
import HuddleCLITestSupport
import Testing

/// `/remove NAME` between `huddle` processes: the removed one is told and exits, the others go on, and the removed
/// identity does not get back in.
@Suite("Removing a participant between huddle processes")
struct RemovalProcessTests {
    @Test(
        "The host removes a joiner: it exits 4; the others keep chatting; it cannot rejoin with any ticket",
        .timeLimit(.minutes(3)))
    func hostRemovesJoiner() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let members = try await ChatProcessTests.chat(cluster, joiners: ["ada", "bob"])
        let (host, ada, bob) = (members["host"]!.process, members["ada"]!.process, members["bob"]!.process)
        let bobID = members["bob"]!.id
        // A ticket bob's node knew: made while it was a member (every member opened it).
        try host.send("/invite")
        let seen = try await Self.ticket(1, of: host)

        // Under the default policy only the creator removes: ada is refused, with a typed error.
        try ada.send("/remove bob")
        try await ada.waitForEvent("error", ["code": "remove-failed"], within: 10)

        // Lines on both sides of the removal: ada's reach the host in order whatever the removal does.
        for index in 0..<5 { try ada.send("before \(index)") }
        try host.send("/remove bob")
        for index in 0..<5 { try ada.send("after \(index)") }
        #expect(try await bob.waitForExit(within: 15) == 4)
        let removed = try #require(bob.events.first { $0.name == "removed" })
        #expect(removed["by"] == members["host"]!.id)
        for process in [host, ada] {
            try await process.waitForEvent("participant-removed", ["participant": bobID], within: 10)
        }
        try await ChatProcessTests.expectMessages(
            (0..<5).map { "before \($0)" } + (0..<5).map { "after \($0)" }, at: host, from: "ada")
        try host.send("still talking")
        try await ChatProcessTests.expectMessages(["still talking"], at: ada, from: "host")

        // Bob's identity tries the ticket it saw (closed at the removal: its handshakes go unanswered) and one made
        // after the removal (its join request is refused). Neither joins; nobody sees it come back.
        try host.send("/invite")
        let later = try await Self.ticket(2, of: host)
        for ticket in [later, seen] {
            let again = try cluster.join(ticket, as: "bob")
            let status = try await again.waitForExit(within: 45)
            #expect(status == 3, "\(again.events)")
            #expect(!again.events.contains { $0.name == "joined" })
        }
        for process in [host, ada] {
            let arrivals = process.events.filter { $0.name == "participant-joined" && $0["participant"] == bobID }
            #expect(arrivals.count == 1, "\(process.label): \(arrivals)")
        }
        for process in [host, ada] {
            process.closeInput()
            #expect(try await process.waitForExit() == 0)
        }
    }

    /// The ticket `process` printed as its `index`-th `ticket` event (0: the one `host` prints at start).
    static func ticket(_ index: Int, of process: HuddleProcess) async throws -> String {
        try await process.poll("ticket \(index)", within: 10) {
            let tickets = process.events.filter { $0.name == "ticket" }.compactMap { $0["ticket"] }
            return tickets.count > index ? tickets[index] : nil
        }
    }
}
