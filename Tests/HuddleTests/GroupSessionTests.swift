import Foundation
import HuddleCrypto
import HuddleProtocol
import Testing

@testable import Huddle

struct DrawTogether: GroupActivity, Equatable {
    var canvas: String
    var metadata: GroupActivityMetadata {
        GroupActivityMetadata(title: "Draw together: \(canvas)", type: .createTogether)
    }
}

struct Stroke: Codable, Sendable, Equatable {
    var id: Int
    var points: [Double]
}

struct CanvasState: Codable, Sendable, Equatable {
    var strokes: [Stroke]
}

/// Fails the test instead of hanging when `body` takes longer than `seconds`.
func withTimeout<Result: Sendable>(
    _ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else {
            Issue.record("timed out after \(seconds) s: \(what)")
            throw CancellationError()
        }
        return result
    }
}

/// Waits until `condition` holds, polling every 10 ms, up to `seconds`.
func eventually(_ what: String, within seconds: Double = 10, _ condition: @Sendable () async -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(seconds)
    while clock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("condition not met within \(seconds) s: \(what)")
    return false
}

func startNode(_ name: String, seed: UInt64) async throws -> HuddleNode {
    var random = ChaChaRandomGenerator(seed: seed)
    return try await HuddleNode.start(.init(identity: Identity(using: &random), name: name))
}

@Suite("GroupSession over loopback UDP", .serialized)
struct GroupSessionTests {
    @Test("Host and two joiners form a session; messages, catch-up, activity and departures work")
    func threeMembers() async throws {
        let host = try await startNode("host", seed: 1)
        let ada = try await startNode("ada", seed: 2)
        let bob = try await startNode("bob", seed: 3)
        defer { Task { for node in [host, ada, bob] { await node.shutdown() } } }

        let session = try await host.activate(DrawTogether(canvas: "sketch"))
        #expect(session.state == .waiting)
        try await session.join()
        #expect(session.state == .joined)
        let ticket = try await session.makeInvitation(validFor: .seconds(600)).ticket

        let invitation = try Invitation(parsing: ticket)
        let adaSession = try await withTimeout(20, "ada joins") {
            try await ada.join(invitation, as: DrawTogether.self)
        }
        #expect(adaSession.state == .joined)
        #expect(adaSession.activity == DrawTogether(canvas: "sketch"))
        #expect(adaSession.id == session.id)

        // Late joiner catch-up: the host sees bob arrive and sends him the canvas, only him.
        let hostMessenger = Messenger(session: session)
        let catchUp = Task {
            for await participants in session.participantUpdates {
                if let newcomer = participants.first(where: { $0.name == "bob" }) {
                    try await hostMessenger.send(
                        CanvasState(strokes: [Stroke(id: 1, points: [0, 1])]), to: .only([newcomer]))
                    return
                }
            }
        }
        let bobSession = try await withTimeout(20, "bob joins") {
            try await bob.join(invitation, as: DrawTogether.self)
        }
        let bobMessenger = Messenger(session: bobSession)
        let received = try await withTimeout(10, "bob gets the catch-up state") {
            for await (state, context) in bobMessenger.messages(of: CanvasState.self) {
                return (state, context.source.name)
            }
            return (CanvasState(strokes: []), "")
        }
        try await catchUp.value
        #expect(received.0 == CanvasState(strokes: [Stroke(id: 1, points: [0, 1])]))
        #expect(received.1 == "host")

        // Everyone sees everyone (full mesh: bob and ada are connected directly).
        for member in [session, adaSession, bobSession] {
            #expect(
                await eventually("three participants at \(member.localParticipant.name)") {
                    member.activeParticipants.count == 3
                }, "\(member.localParticipant.name) sees \(member.activeParticipants.map(\.name))")
        }

        // Reliable messages to everyone arrive in order at both others.
        let adaMessenger = Messenger(session: adaSession)
        let adaStrokes = Task {
            var strokes: [Int] = []
            for await (stroke, _) in adaMessenger.messages(of: Stroke.self) {
                strokes.append(stroke.id)
                if strokes.count == 50 { break }
            }
            return strokes
        }
        let bobStrokes = Task {
            var strokes: [Int] = []
            for await (stroke, _) in bobMessenger.messages(of: Stroke.self) {
                strokes.append(stroke.id)
                if strokes.count == 50 { break }
            }
            return strokes
        }
        for id in 0..<50 { try await hostMessenger.send(Stroke(id: id, points: [Double(id)])) }
        let adaGot = try await withTimeout(10, "ada's strokes") { await adaStrokes.value }
        let bobGot = try await withTimeout(10, "bob's strokes") { await bobStrokes.value }
        #expect(adaGot == Array(0..<50))
        #expect(bobGot == Array(0..<50))

        // The activity converges everywhere.
        try await adaSession.setActivity(DrawTogether(canvas: "second"))
        for member in [session, adaSession, bobSession] {
            #expect(await eventually("activity converges") { member.activity == DrawTogether(canvas: "second") })
        }

        // The host leaves; the others go on without it.
        await session.leave()
        #expect(session.state == .invalidated(reason: .left))
        for member in [adaSession, bobSession] {
            #expect(await eventually("host gone") { member.activeParticipants.map(\.name).sorted() == ["ada", "bob"] })
        }

        // Bob ends it for everyone.
        try await bobSession.end()
        #expect(await eventually("ended for ada") { adaSession.state != .joined })
        if case .invalidated(.ended(let by)) = adaSession.state {
            #expect(by?.name == "bob")
        } else {
            Issue.record("ada's session: \(adaSession.state)")
        }
    }

    @Test("An expired ticket fails at once; a message over 256 KiB is a typed error")
    func typedErrors() async throws {
        let host = try await startNode("host", seed: 11)
        let other = try await startNode("other", seed: 12)
        defer {
            Task {
                await host.shutdown(); await other.shutdown()
            }
        }
        let session = try await host.activate(DrawTogether(canvas: "x"))
        try await session.join()
        let expired = try await session.makeInvitation(validFor: .seconds(0))
        await #expect(throws: HuddleError.self) { _ = try await other.join(expired, as: DrawTogether.self) }
        let messenger = Messenger(session: session)
        let big = Data(count: Messenger.maxMessageSize + 1)
        do {
            try await messenger.send(big)
            Issue.record("no error")
        } catch HuddleError.messageTooLarge(let size, let limit) {
            #expect(size > limit)
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        let unreliable = Messenger(session: session, deliveryMode: .unreliable)
        do {
            try await unreliable.send(Data(count: 2000))
            Issue.record("no error")
        } catch HuddleError.datagramTooLarge {
        } catch {
            Issue.record("unexpected error: \(error)")
        }
    }
}
