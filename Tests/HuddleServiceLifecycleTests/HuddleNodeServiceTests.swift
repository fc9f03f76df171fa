import Huddle
import HuddleServiceLifecycle
import Logging
import ServiceLifecycle
import Testing

struct Chat: GroupActivity {
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "chat", type: .generic) }
}

/// A node run by a `ServiceGroup` leaves its session the graceful way when the group stops.
@Suite("HuddleNodeService in a ServiceGroup", .serialized)
struct HuddleNodeServiceTests {
    static func node(_ name: String) async throws -> HuddleNode {
        var random = SystemRandomGenerator()
        return try await HuddleNode.start(.init(identity: Identity(using: &random), name: name))
    }

    /// A host and a member of its session; the member runs as a service in a group. Returns the group, the host's
    /// session and the member's participant.
    static func session(
        host: HuddleNode, member: HuddleNode
    ) async throws -> (GroupSession<Chat>, Participant) {
        let session = try await host.activate(Chat())
        try await session.join()
        let invitation = try Invitation(parsing: try await session.makeInvitation().ticket)
        let joined = try await member.join(invitation, as: Chat.self)
        return (session, joined.localParticipant)
    }

    /// Waits for `participant` to leave `session` and returns why (`nil`: not within 10 s).
    static func departure(
        of participant: Participant, from session: GroupSession<Chat>
    ) -> Task<ParticipantChange.DepartureReason?, Never> {
        let changes = session.participantChanges
        return Task {
            let watcher = Task { () -> ParticipantChange.DepartureReason? in
                for await change in changes {
                    if case .left(let who, let reason) = change, who == participant { return reason }
                }
                return nil
            }
            let timeout = Task {
                try? await Task.sleep(for: .seconds(10))
                watcher.cancel()
            }
            defer { timeout.cancel() }
            return await watcher.value
        }
    }

    /// A host's session with a member run as the only service of a group, which `stop` then stops (given the group
    /// and the task running it). Returns the host and its session, the member, and why the host saw it go.
    static func runThenStop(
        _ stop: @Sendable (ServiceGroup, Task<Void, any Error>) async throws -> Void
    ) async throws -> (
        host: HuddleNode, session: GroupSession<Chat>, member: HuddleNode, departure: ParticipantChange.DepartureReason?
    ) {
        let host = try await Self.node("host")
        let member = try await Self.node("member")
        let (session, participant) = try await Self.session(host: host, member: member)
        let departure = Self.departure(of: participant, from: session)
        // Let the watcher subscribe: participantChanges only yields what happens after.
        try await Task.sleep(for: .milliseconds(100))
        let group = ServiceGroup(
            services: [HuddleNodeService(member)], gracefulShutdownSignals: [], cancellationSignals: [],
            logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        try await stop(group, running)
        return (host, session, member, await departure.value)
    }

    @Test("A graceful shutdown of the group makes the node leave: the others see it left, not unreachable")
    func gracefulShutdownLeaves() async throws {
        let run = try await Self.runThenStop { group, running in
            await group.triggerGracefulShutdown()
            try await running.value
        }
        defer { Task { await run.host.shutdown() } }
        #expect(run.departure == .left)
        #expect(run.session.activeParticipants.count == 1)
        // The node is shut down: it cannot start a session any more.
        await #expect(throws: (any Error).self) { try await run.member.activate(Chat()).join() }
    }

    @Test("Cancelling the group's task shuts the node down too")
    func cancellationLeaves() async throws {
        let run = try await Self.runThenStop { _, running in
            running.cancel()
            _ = try? await running.value
        }
        defer { Task { await run.host.shutdown() } }
        #expect(run.departure == .left)
    }
}
