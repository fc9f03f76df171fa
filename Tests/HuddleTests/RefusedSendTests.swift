import Foundation
import HuddleCLITestSupport
import HuddleCrypto
@_spi(Testing) import HuddleTransport
import Testing

@testable import Huddle

/// A reliable send that waits for room in a full outbound queue and is refused because its connection closed is a
/// message that will not be delivered: it is reported like every other (issue 34: a frozen member's backlog of
/// lines was lost without a report this way).
@Suite("Sends refused while waiting for room are reported")
struct RefusedSendTests {
    /// Sums the delivery failures reported for one participant.
    actor Tally {
        var count = 0
        func add(_ value: Int) { count += value }
    }

    @Test(
        "Every send to a vanished peer that returned is reported undelivered, the one refused at the timeout too",
        .timeLimit(.minutes(2)))
    func refusedWhileWaitingIsReported() async throws {
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
        // send waits until the idle timeout closes the connection and refuses it.
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
