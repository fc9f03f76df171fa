import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Huddle

/// Ask-to-join tickets over loopback UDP: `makeInvitation(requiresApproval:)`, `joinRequests`, `admit` and `deny`.
@Suite("Asking to join over loopback UDP", .serialized)
struct JoinRequestTests {
    /// The first `.asked` change of `session`'s request stream (from the session's start, so none is missed).
    static func firstRequest(_ session: GroupSession<DrawTogether>) async throws -> JoinRequest {
        try await withTimeout(20, "a join request arrives") {
            for await change in session.joinRequests {
                if case .asked(let request) = change { return request }
            }
            throw CancellationError()
        }
    }

    @Test(
        "A member that is not the sponsor admits the joiner; it waits first, then sends at once; everyone sees who answered",
        .timeLimit(.minutes(2)))
    func admittedByAnotherMember() async throws {
        let host = try await startNode("host", seed: 1401)
        let ada = try await startNode("ada", seed: 1402)
        let cara = try await startNode("cara", seed: 1403)
        defer { Task { for node in [host, ada, cara] { await node.shutdown() } } }
        let sessions = try await formSession(host, [ada])
        // A ticket naming only the host: the host is cara's sponsor, ada only hears of the request.
        var ticket = try await sessions[0].makeInvitation(validFor: .seconds(600), requiresApproval: true)
        ticket = Invitation(
            session: ticket.session, secret: ticket.secret, expiresAt: ticket.expiresAt,
            inviterSigningKey: ticket.inviterSigningKey, inviterName: ticket.inviterName,
            members: Array(ticket.members.prefix(1)), relays: [])
        let waited = NIOLockedValueBox(0)
        let joining = Task {
            try await cara.join(ticket, as: DrawTogether.self) { waited.withLockedValue { $0 += 1 } }
        }
        let request = try await Self.firstRequest(sessions[1])
        #expect(request.name == "cara")
        #expect(request.fingerprint == cara.fingerprint)
        #expect(await eventually("the host sees the request too") { sessions[0].pendingJoinRequests == [request] })
        #expect(await eventually("cara is told she waits") { waited.withLockedValue { $0 } == 1 })
        // Waiting is not joining: nobody lists her yet.
        #expect(!sessions[0].activeParticipants.contains { $0.name == "cara" })

        try await sessions[1].admit(request)
        let joined = try await withTimeout(20, "cara joins once admitted") { try await joining.value }
        #expect(joined.state == .joined)
        // She sends at once; both members get it.
        let inbox = [Messenger(session: sessions[0]), Messenger(session: sessions[1])].map {
            $0.messages(of: Stroke.self)
        }
        try await Messenger(session: joined).send(Stroke(id: 7, points: [1, 2]))
        for messages in inbox {
            let first = try await withTimeout(10, "the stroke arrives") {
                for await (stroke, context) in messages { return (stroke, context.source.name) }
                throw CancellationError()
            }
            #expect(first.0 == Stroke(id: 7, points: [1, 2]) && first.1 == "cara")
        }
        // Both members learned who let her in, and the request no longer waits anywhere.
        let adaParticipant = sessions[1].localParticipant
        for session in sessions {
            let answer = try await withTimeout(10, "the answer is reported") {
                for await change in session.joinRequests {
                    if case .admitted(let answered, let by) = change { return (answered, by) }
                }
                throw CancellationError()
            }
            #expect(answer.0 == request && answer.1 == adaParticipant)
            #expect(session.pendingJoinRequests.isEmpty)
        }
        // An answered request cannot be answered again.
        do {
            try await sessions[0].deny(request)
            Issue.record("denied a request that was answered")
        } catch .joinRequestNotPending {
        } catch {
            Issue.record("unexpected error: \(error)")
        }
    }

    @Test(
        "A denied joiner's join fails with a typed error, and asking again is refused at once", .timeLimit(.minutes(2)))
    func denied() async throws {
        let host = try await startNode("host", seed: 1411)
        let eve = try await startNode("eve", seed: 1412)
        defer { Task { for node in [host, eve] { await node.shutdown() } } }
        let session = try await host.activate(DrawTogether(canvas: "ask"))
        try await session.join()
        let ticket = try await session.makeInvitation(requiresApproval: true)
        let joining = Task { () -> HuddleError? in
            do throws(HuddleError) {
                _ = try await eve.join(ticket, as: DrawTogether.self)
                return nil
            } catch {
                return error
            }
        }
        let request = try await withTimeout(20, "eve asks") {
            for await change in session.joinRequests {
                if case .asked(let request) = change { return request }
            }
            throw CancellationError()
        }
        try await session.deny(request)
        let failure = try await withTimeout(20, "eve's join ends") { await joining.value }
        guard case .joinFailed(.denied) = failure else {
            Issue.record("expected joinFailed(.denied), got \(String(describing: failure))")
            return
        }
        #expect(!session.activeParticipants.contains { $0.name == "eve" })
        // Asking again in this session is refused without anyone being asked.
        let clock = ContinuousClock()
        let started = clock.now
        do {
            _ = try await eve.join(ticket, as: DrawTogether.self)
            Issue.record("a denied joiner got in")
        } catch .joinFailed(.denied) {
            #expect(clock.now - started < .seconds(10))
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        #expect(session.pendingJoinRequests.isEmpty)
    }
}
