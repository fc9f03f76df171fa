import Foundation
import HuddleCrypto
import Testing

@testable import Huddle

/// A device that leaves and comes straight back (a restarted `huddle join` with the same identity file).
@Suite("Rejoining over loopback UDP")
struct RejoinTests {
    @Test("Leaving and rejoining at once with the same identity works (the old connection is still draining)")
    func rejoinRightAfterLeaving() async throws {
        let host = try await startNode("host", seed: 301)
        var nodes = [host]
        do {
            let session = try await host.activate(DrawTogether(canvas: "rejoin"))
            try await session.join()
            let invitation = try Invitation(parsing: try await session.makeInvitation(validFor: .seconds(600)).ticket)
            for round in 0..<3 {
                // Same seed, same identity: the host knows this peer from the previous round.
                let ada = try await startNode("ada", seed: 302)
                nodes.append(ada)
                // The rejoins (rounds 1 and 2) must not wait for the old connection to drain: 10 s. Round 0 is a
                // plain first join, bounded like the join itself (30 s): in one fresh-clone CI run, among the
                // suite's parallel process tests, it needed more than 10 s (not reproduced alone or in three more
                // full runs).
                let adaSession = try await withTimeout(round == 0 ? 30 : 10, "ada joins (round \(round))") {
                    try await ada.join(invitation, as: DrawTogether.self)
                }
                #expect(
                    await eventually("host sees ada (round \(round))", within: 5) {
                        session.activeParticipants.contains(adaSession.localParticipant)
                    })
                await adaSession.leave()
                await ada.shutdown()
                nodes.removeLast()
                #expect(
                    await eventually("ada gone (round \(round))", within: 5) {
                        !session.activeParticipants.contains(adaSession.localParticipant)
                    })
            }
        } catch {
            for node in nodes { await node.shutdown() }
            throw error
        }
        for node in nodes { await node.shutdown() }
    }
}
