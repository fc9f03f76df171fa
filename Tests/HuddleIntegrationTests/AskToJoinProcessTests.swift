import Foundation
import HuddleCLITestSupport
import Testing

/// Ask-to-join tickets between `huddle` processes: `/invite ask`, the `join-request` events every member prints,
/// `/admit NAME` and `/deny NAME`, and the joiner's `waiting` event and exit status.
@Suite("Asking to join between huddle processes")
struct AskToJoinProcessTests {
    @Test(
        "An ask-to-join joiner is admitted by a member that is not its sponsor; another is denied and exits 5",
        .timeLimit(.minutes(3)))
    func admitOneDenyAnother() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let members = try await ChatProcessTests.chat(cluster, joiners: ["ada"])
        let (host, ada) = (members["host"]!.process, members["ada"]!.process)
        try host.send("/invite ask")
        try await host.waitForEvent("ticket", ["ask_to_join": "true"], within: 10)
        let ticket = try await RemovalProcessTests.ticket(1, of: host)

        // cara asks; both members are asked; ada (whichever member cara reached) lets her in.
        let cara = try cluster.join(ticket, as: "cara")
        for process in [host, ada] { try await process.waitForEvent("join-request", ["name": "cara"], within: 20) }
        try await cara.waitForEvent("waiting for an answer", within: 10) {
            $0.name == "waiting" && $0["for"]?.contains("answer") == true
        }
        #expect(!cara.events.contains { $0.name == "joined" })
        try ada.send("/admit cara")
        let joined = try await cara.waitForEvent("joined", within: 20)
        let caraID = try #require(joined["participant"])
        for process in [host, ada] {
            try await process.waitForEvent(
                "join-request-answered", ["name": "cara", "outcome": "admitted", "by": members["ada"]!.id],
                within: 10)
            try await process.waitForEvent("participant-joined", ["participant": caraID], within: 10)
        }
        // Her first lines reach both members.
        try cara.send("hello from cara")
        for process in [host, ada] {
            try await ChatProcessTests.expectMessages(["hello from cara"], at: process, from: "cara")
        }

        // eve asks with the same ticket; the host turns her away: her join ends with its own status.
        let eve = try cluster.join(ticket, as: "eve")
        for process in [host, ada, cara] {
            try await process.waitForEvent("join-request", ["name": "eve"], within: 20)
        }
        try host.send("/deny eve")
        #expect(try await eve.waitForExit(within: 20) == 5)
        #expect(eve.events.contains { $0.name == "error" && $0["code"] == "join-denied" })
        #expect(!eve.events.contains { $0.name == "joined" })
        for process in [host, ada, cara] {
            try await process.waitForEvent(
                "join-request-answered", ["name": "eve", "outcome": "denied", "by": members["host"]!.id], within: 10)
        }
        // Answering again is a typed error, not a second answer.
        try ada.send("/admit eve")
        try await ada.waitForEvent("error", ["code": "admit-failed"], within: 10)
        for process in [host, ada, cara] {
            #expect(!process.events.contains { $0.name == "participant-joined" && $0["name"] == "eve" })
            process.closeInput()
            #expect(try await process.waitForExit() == 0)
        }
    }
}
