import Foundation
import Testing

@testable import Huddle

/// Handles act on their own session only (issue 35): after a node leaves session A and joins B, every operation on
/// A's old handles fails as "A is over" (or, for `leave()`, does nothing) and B goes on untouched.
@Suite("Stale handles act on their own session only", .serialized)
struct StaleHandleTests {
    /// Runs `operation`, which must throw ``HuddleError/invalidated(_:)`` with reason `left`.
    static func expectLeft(
        _ what: String, _ operation: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await operation()
            Issue.record("\(what) on a session that was left did not throw", sourceLocation: sourceLocation)
        } catch let error as HuddleError {
            guard case .invalidated(.left) = error else {
                Issue.record("\(what): expected invalidated(left), got \(error)", sourceLocation: sourceLocation)
                return
            }
        } catch {
            Issue.record("\(what): expected a HuddleError, got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("Every operation on a left session's handles fails with invalidated(left); the next session is unaffected")
    func staleHandlesLeaveTheNextSessionAlone() async throws {
        let host = try await startNode("host", seed: 3501)
        let ada = try await startNode("ada", seed: 3502)
        defer { Task { for node in [host, ada] { await node.shutdown() } } }

        // Session A, with ada in it, and its handles on the host.
        let sessionA = try await host.activate(DrawTogether(canvas: "a"))
        try await sessionA.join()
        let adaA = try await ada.join(try await sessionA.makeInvitation(), as: DrawTogether.self)
        #expect(await eventually("ada in A") { sessionA.activeParticipants.count == 2 })
        let messengerA = Messenger(session: sessionA)
        let journalA = Journal(session: sessionA)
        await sessionA.leave()
        await adaA.leave()

        // Session B: both nodes again.
        let sessionB = try await host.activate(DrawTogether(canvas: "b"))
        let messengerB = Messenger(session: sessionB)
        try await sessionB.join()
        let adaB = try await ada.join(try await sessionB.makeInvitation(), as: DrawTogether.self)
        #expect(await eventually("ada in B") { sessionB.activeParticipants.count == 2 })
        let adaMessenger = Messenger(session: adaB)
        let received = Task {
            for await (stroke, _) in adaMessenger.messages(of: Stroke.self) where stroke.id == 2 { return true }
            return false
        }

        // A's handles, one operation each.
        await Self.expectLeft("send") { try await messengerA.send(Stroke(id: 1, points: [])) }
        await Self.expectLeft("setActivity") { try await sessionA.setActivity(DrawTogether(canvas: "from A")) }
        await Self.expectLeft("makeInvitation") { _ = try await sessionA.makeInvitation() }
        await Self.expectLeft("end") { try await sessionA.end() }
        await Self.expectLeft("peerStatistics") { _ = try await sessionA.peerStatistics() }
        await Self.expectLeft("journal add") { _ = try await journalA.add(Data([1, 2, 3])) }
        await Self.expectLeft("announceNearby") { _ = try await sessionA.announceNearby(as: "stale") }
        var staleMessages = messengerA.messages(of: Stroke.self).makeAsyncIterator()
        #expect(await staleMessages.next() == nil, "a left session's message stream ends at once")
        await sessionA.leave()  // A no-op: it must not leave B.

        // B is untouched: still joined with both members, its activity its own, and its messages flow.
        #expect(sessionB.state == .joined)
        #expect(sessionB.activeParticipants.count == 2)
        #expect(sessionB.activity == DrawTogether(canvas: "b"))
        try await messengerB.send(Stroke(id: 2, points: []))
        #expect(try await withTimeout(10, "ada receives B's message") { await received.value })
        #expect(adaB.activeParticipants.contains(sessionB.localParticipant))
    }
}
