import Foundation
import HuddleCLITestSupport
import HuddleCrypto
@_spi(Testing) import HuddleTransport
import Testing

@testable import Huddle

/// Every reliable send to a peer that vanished is reported: those the endpoint accepted when its connection times out,
/// those still queued in front of it, and those sent before the peer stops being a participant as unsent (issue 34:
/// the freeze soak looks for lines lost without a report).
@Suite("Sends to a vanished peer are all reported")
struct VanishedPeerSendTests {
    /// Sums the delivery failures reported for one participant.
    actor Tally {
        var count = 0
        func add(_ value: Int) { count += value }
    }

    @Test(
        "Every send to a vanished peer that returned is reported undelivered exactly once",
        .timeLimit(.minutes(2)))
    func everySendIsReported() async throws {
        var random = ChaChaRandomGenerator(seed: 3601)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "sender")
        // A small queue in front of the endpoint, so a send soon waits for room.
        configuration.transport.maxOutboundMessagesPerChannel = 4
        let sender = try await HuddleNode.start(configuration)
        let victim = try await startNode("victim", seed: 3602)
        defer { Task { for node in [sender, victim] { await node.shutdown() } } }
        let session = try await sender.activate(DrawTogether(canvas: "refused"))
        try await session.join()
        let victimSession = try await victim.join(try await session.makeInvitation(), as: DrawTogether.self)
        let target = victimSession.localParticipant
        #expect(await eventually("the victim is a participant") { session.activeParticipants.contains(target) })

        let tally = Tally()
        let failures = session.deliveryFailures
        let reporter = Task {
            for await failure in failures where failure.participant == target { await tally.add(failure.count) }
        }
        // Gone without a CLOSE: nothing it was sent is acknowledged, the window fills, then the queue, and the next
        // send waits until the idle timeout closes the connection.
        await victim.driver.abandon()
        let messenger = Messenger(session: session)
        var returned = 0
        while true {
            do {
                try await messenger.send(Numbered(sequence: returned), to: .only([target]))
                returned += 1
            } catch HuddleError.notAParticipant {
                break
            }
        }
        let sent = returned
        #expect(sent > 1_025, "the endpoint's window (1,025 messages) and the queue filled first: \(sent)")
        #expect(
            await eventually("all \(sent) sends reported", within: TestTiming.seconds(15)) {
                await tally.count >= sent
            })
        #expect(await tally.count == sent, "every send that returned was reported exactly once")
        reporter.cancel()
    }
}
