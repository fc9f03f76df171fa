import Foundation
import HuddleCLITestSupport
import HuddleCrypto
@_spi(Testing) import HuddleTransport
import Testing

@testable import Huddle

/// Every reliable send to a peer that vanished is reported, by receipt: those the endpoint accepted when its
/// connection times out, those still queued in front of it, and those sent before the peer stops being a participant
/// (issue 34: the freeze soak looks for lines lost without a report; issue 35: failures name their receipts).
@Suite("Sends to a vanished peer are all reported")
struct VanishedPeerSendTests {
    @Test(
        "A crashed member's unconfirmed messages are named by receipt, each once; over 5,000 in a burst, none dropped",
        .timeLimit(.minutes(2)))
    func everySendIsReportedByReceipt() async throws {
        let sender = try await startNode("sender", seed: 3601)
        let victim = try await startNode("victim", seed: 3602)
        defer { Task { for node in [sender, victim] { await node.shutdown() } } }
        let session = try await sender.activate(DrawTogether(canvas: "refused"))
        try await session.join()
        let victimSession = try await victim.join(try await session.makeInvitation(), as: DrawTogether.self)
        let target = victimSession.localParticipant
        #expect(await eventually("the victim is a participant") { session.activeParticipants.contains(target) })
        let messenger = Messenger(session: session)

        // Confirmed before the crash: the outcome says delivered.
        let reader = Task {
            for await _ in Messenger(session: victimSession).messages(of: Numbered.self) {}
        }
        var confirmed: [MessageReceipt] = []
        for sequence in 0..<20 { confirmed.append(try await messenger.send(Numbered(sequence: sequence))) }
        for receipt in confirmed { #expect(try await messenger.outcome(of: receipt) == .delivered) }
        reader.cancel()

        // Gone without a CLOSE: nothing it is sent now is acknowledged; the window fills (1,025 messages), then the
        // queue in front of the endpoint (4,096), and the next send waits until the idle timeout closes the
        // connection: then every one of them fails at once.
        await victim.driver.abandon()
        var receipts: [MessageReceipt] = []
        while true {
            do {
                receipts.append(try await messenger.send(Numbered(sequence: 20 + receipts.count), to: .only([target])))
            } catch HuddleError.notAParticipant {
                break
            } catch {
                Issue.record("unexpected error: \(error)")
            }
        }
        let sent = receipts.count
        #expect(sent > 5_000, "the window and the queue filled first: \(sent)")
        var outcomes: [UInt64: DeliveryOutcome] = [:]
        for receipt in receipts { outcomes[receipt.id] = try await messenger.outcome(of: receipt) }
        let failed = Set(outcomes.filter { $0.value == .failed([target: .unreachable]) }.keys)
        #expect(failed.count == receipts.count, "every message after the crash failed, as unreachable")

        // The reports (from the session's start, so read after the fact) name exactly those receipts, each once.
        var named: [UInt64] = []
        var counted = 0
        for failure in await collected(
            session.deliveryFailures, until: { $0.reduce(0) { $0 + $1.count } >= sent })
        {
            #expect(failure.participant == target && failure.reason == .unreachable)
            #expect(failure.count == failure.receipts.count)
            named += failure.receipts
            counted += failure.count
        }
        #expect(named.count == Set(named).count, "a receipt is named once")
        #expect(Set(named) == failed)
        #expect(counted == receipts.count)
        #expect(confirmed.allSatisfy { !named.contains($0.id) })
    }

    /// The reports of `stream` until `enough` says the list is complete (or 15 s passed).
    func collected(
        _ stream: AsyncStream<DeliveryFailure>, until enough: @escaping @Sendable ([DeliveryFailure]) -> Bool
    ) async -> [DeliveryFailure] {
        let collector = Task {
            var reports: [DeliveryFailure] = []
            for await report in stream {
                reports.append(report)
                if enough(reports) { break }
            }
            return reports
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(TestTiming.seconds(15)))
            collector.cancel()
        }
        defer { timeout.cancel() }
        return await collector.value
    }
}
