import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// `huddle host` and `huddle join` as separate processes on loopback, driven through their standard input and their
/// `--json` events.
@Suite("huddle processes on loopback")
struct ChatProcessTests {
    /// Host plus joiners, each joined (its `joined` event seen) and seeing all the others (`/peers` counts them).
    static func chat(
        _ cluster: HuddleCluster, joiners: [String]
    ) async throws -> [String: (process: HuddleProcess, id: String)] {
        let (host, ticket) = try await cluster.host("host")
        var members = ["host": (process: host, id: try await host.waitForEvent("joined")["participant"] ?? "")]
        for name in joiners {
            let process = try cluster.join(ticket, as: name)
            let joined = try await process.waitForEvent("joined", within: 35)
            members[name] = (process, joined["participant"] ?? "")
        }
        for (_, member) in members {
            try await member.process.waitForPeerCount(joiners.count)
        }
        return members
    }

    /// The texts of chat messages `process` received from `name`, in arrival order.
    static func messages(at process: HuddleProcess, from name: String) -> [String] {
        process.events.filter { $0.name == "message" && $0["name"] == name }.compactMap { $0["text"] }
    }

    /// Waits until `process` received exactly `texts` from `name` after the first `skipping` messages from it (in
    /// this order; more is a mismatch too).
    static func expectMessages(
        _ texts: [String], at process: HuddleProcess, from name: String, skipping: Int = 0, within seconds: Double = 15
    ) async throws {
        do {
            try await process.waitForEvent("\(texts.count) lines from \(name)", within: seconds) { _ in
                messages(at: process, from: name).count >= skipping + texts.count
            }
        } catch {
            Issue.record("\(error)")
        }
        #expect(Array(messages(at: process, from: name).dropFirst(skipping)) == texts, "\(process.label) from \(name)")
    }

    @Test(
        "Host and two joiners chat in order; the host's /leave and a joiner's end of input are clean departures",
        .timeLimit(.minutes(2)))
    func threeProcessChat() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let members = try await Self.chat(cluster, joiners: ["ada", "bob"])
        let (host, ada, bob) = (members["host"]!.process, members["ada"]!.process, members["bob"]!.process)

        // Participant-joined events: the host saw both arrive, ada saw bob arrive.
        try await host.waitForEvent("participant-joined", ["name": "ada", "participant": members["ada"]!.id])
        try await host.waitForEvent("participant-joined", ["name": "bob", "participant": members["bob"]!.id])
        try await ada.waitForEvent("participant-joined", ["name": "bob"])

        // Everyone talks at once; each line reaches both others, in order.
        let lines = (0..<10).map { "line \($0)" }
        for index in lines.indices {
            for (name, member) in members { try member.process.send("\(name) \(lines[index])") }
        }
        for (name, member) in members {
            let expected = lines.map { "\(name) \($0)" }
            for (otherName, other) in members where otherName != name {
                try await Self.expectMessages(expected, at: other.process, from: name)
            }
            #expect(Self.messages(at: member.process, from: name).isEmpty, "\(name) does not hear itself")
        }

        // The host leaves: it exits 0 and the others see a departure with reason "left", then keep chatting.
        try host.send("/leave")
        #expect(try await host.waitForExit() == 0)
        for member in [ada, bob] {
            try await member.waitForEvent(
                "participant-left", ["participant": members["host"]!.id, "reason": "left"], within: 10)
        }
        try ada.send("still here")
        try bob.send("me too")
        try await Self.expectMessages(["still here"], at: bob, from: "ada", skipping: lines.count)
        try await Self.expectMessages(["me too"], at: ada, from: "bob", skipping: lines.count)

        // End of input on a joiner: it leaves (ada sees reason "left") and exits 0.
        bob.closeInput()
        #expect(try await bob.waitForExit() == 0)
        try await ada.waitForEvent("participant-left", ["participant": members["bob"]!.id, "reason": "left"])
        ada.closeInput()
        #expect(try await ada.waitForExit() == 0)
        for member in [host, ada, bob] {
            #expect(!member.events.contains { $0.name == "error" }, "\(member.label): \(member.events)")
        }
    }

    @Test("A joiner killed with SIGKILL is reported unreachable by the others within 45 s", .timeLimit(.minutes(4)))
    func killedJoinerIsUnreachable() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let members = try await Self.chat(cluster, joiners: ["ada", "bob"])
        let victim = members["bob"]!
        let clock = ContinuousClock()
        victim.process.signal(SIGKILL)
        let killedAt = clock.now
        #expect(try await victim.process.waitForExit() == 128 + SIGKILL)
        for name in ["host", "ada"] {
            let process = members[name]!.process
            try await process.waitForEvent(
                "participant-left", ["participant": victim.id, "reason": "unreachable"],
                within: TestTiming.seconds(50))
            let elapsed = clock.now - killedAt
            #expect(elapsed <= TestTiming.bound(.seconds(45)), "\(name) noticed after \(elapsed)")
            print("SIGKILL: \(name) reported bob unreachable after at most \(elapsed)")
        }
        // The two that are left still talk.
        try members["host"]!.process.send("after the crash")
        try await Self.expectMessages(["after the crash"], at: members["ada"]!.process, from: "host")
    }
}
