import Foundation
import Glibc
import HuddleCLITestSupport
import Testing

/// Issue 37, item 4: a member that falls silent is noticed in seconds, not at the idle timeout. Real `huddle`
/// processes on loopback; the silence is a SIGKILL (gone for good) or a SIGSTOP (a stalled process that comes back).
@Suite("A silent participant is reported unresponsive in seconds", .serialized)
struct UnresponsiveProcessTests {
    /// The two others of a three-member chat: whichever of them joined, each sees the silence on its own.
    static func cluster(_ cluster: HuddleCluster) async throws -> (quiet: HuddleProcess, others: [HuddleProcess]) {
        let members = try await ChatProcessTests.chat(cluster, joiners: ["ada", "bob"])
        return (members["bob"]!.process, [members["host"]!.process, members["ada"]!.process])
    }

    @Test("SIGKILL: every other member prints participant-unresponsive within 3 s, then participant-left unreachable")
    func killedMember() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (bob, others) = try await Self.cluster(cluster)
        // Idle for a while first: the keepalives, not traffic, have to notice the silence.
        try await Task.sleep(for: .seconds(2))
        let clock = ContinuousClock()
        let killedAt = clock.now
        bob.signal(SIGKILL)
        var noticed: [Duration] = []
        for member in others {
            try await member.waitForEvent("participant-unresponsive", ["name": "bob"], within: TestTiming.seconds(6))
            noticed.append(clock.now - killedAt)
        }
        // Every member waits for its own notice; the later of the two bounds both.
        #expect(noticed.max()! <= TestTiming.bound(.seconds(3)), "noticed after \(noticed)")
        for member in others {
            try await member.waitForEvent(
                "participant-left", ["name": "bob", "reason": "unreachable"], within: TestTiming.seconds(30))
        }
        let verdict = clock.now - killedAt
        // The idle timeout is 15 s after the first unanswered keepalive: the verdict comes well before 40 s.
        #expect(verdict <= TestTiming.bound(.seconds(25)), "unreachable after \(verdict)")
        let schema = try EventSchema.load()
        for member in others {
            let silent = member.events.filter { $0.name == "participant-unresponsive" }
            #expect(silent.count == 1, "reported once: \(silent)")
            for line in member.stdoutLines where line.contains("participant-unresponsive") {
                #expect(schema.violations(of: line).isEmpty, "\(line)")
            }
            // Nothing came back from bob, so nothing says it did.
            #expect(!member.events.contains { $0.name == "participant-responsive" })
        }
        print(
            "SIGKILL noticed after \(noticed.map { $0.formatted(.units(allowed: [.milliseconds])) }); unreachable after \(verdict)"
        )
        for member in others { member.closeInput() }
        for member in others { #expect(try await member.waitForExit() == 0) }
    }

    @Test("SIGSTOP for about 3 s: unresponsive, then responsive after SIGCONT; nobody leaves and chat goes on")
    func stalledMember() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (bob, others) = try await Self.cluster(cluster)
        bob.signal(SIGSTOP)
        for member in others {
            try await member.waitForEvent("participant-unresponsive", ["name": "bob"], within: TestTiming.seconds(6))
        }
        // A line sent while bob is stopped waits in the sender's transport and arrives after SIGCONT.
        try others[0].send("while you were away")
        try await Task.sleep(for: .seconds(1))
        bob.signal(SIGCONT)
        for member in others {
            try await member.waitForEvent("participant-responsive", ["name": "bob"], within: TestTiming.seconds(6))
        }
        try await bob.waitForEvent("message", ["text": "while you were away"], within: TestTiming.seconds(10))
        for member in others + [bob] {
            let trouble = member.events.filter { ["participant-left", "undelivered"].contains($0.name) }
            #expect(trouble.isEmpty, "\(trouble)")
        }
        let schema = try EventSchema.load()
        for member in others {
            for line in member.stdoutLines where line.contains("responsive") {
                #expect(schema.violations(of: line).isEmpty, "\(line)")
            }
        }
        for member in others + [bob] { member.closeInput() }
        for member in others + [bob] { #expect(try await member.waitForExit() == 0) }
    }
}
