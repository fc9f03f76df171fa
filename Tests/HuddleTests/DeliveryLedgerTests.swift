import HuddleCrypto
import Testing

@testable import Huddle

/// ``DeliveryLedger`` and ``ReportLog`` without a node: how receipts settle, and that reports are kept from the
/// session's start and never dropped.
@Suite("Delivery ledger and report log")
struct DeliveryLedgerTests {
    static let ada = MessageRouterTests.ada
    static let bob = MessageRouterTests.bob

    @Test("A receipt settles once every recipient confirmed it or was reported; a waiter is resumed then")
    func settling() async {
        let ledger = DeliveryLedger()
        let first = ledger.open(for: RecipientGroup([Self.ada, Self.bob]))
        let second = ledger.open(for: RecipientGroup([Self.ada, Self.bob]))
        #expect((first, second) == (1, 2))
        let waiting = Task { await ledger.outcome(of: second) }
        ledger.delivered([(Self.ada.staticKey, first), (Self.bob.staticKey, first), (Self.ada.staticKey, second)])
        #expect(await ledger.outcome(of: first) == .delivered)
        #expect(ledger.openCount == 1)
        // A report names the receipts it settles for that recipient, once: a second report of them names none.
        #expect(ledger.failed([second, 7], for: Self.bob.staticKey, reason: .unreachable) == [second])
        #expect(ledger.failed([second], for: Self.bob.staticKey, reason: .left).isEmpty)
        #expect(await waiting.value == .failed([Self.bob: .unreachable]))
        // A confirmation that comes after the recipient was reported changes nothing.
        ledger.delivered([(Self.bob.staticKey, second)])
        #expect(await ledger.outcome(of: second) == .failed([Self.bob: .unreachable]))
        #expect(ledger.openCount == 0)
    }

    @Test("The session's end fails every open receipt per recipient, resumes waiters, and fails later sends at once")
    func closing() async {
        let ledger = DeliveryLedger()
        let first = ledger.open(for: RecipientGroup([Self.ada, Self.bob]))
        let second = ledger.open(for: RecipientGroup([Self.ada]))
        ledger.delivered([(Self.bob.staticKey, first)])
        let waiting = Task { await ledger.outcome(of: first) }
        let unconfirmed = ledger.closeAll()
        #expect(unconfirmed == [Self.ada: [first, second]])
        #expect(await waiting.value == .failed([Self.ada: .sessionEnded]))
        let late = ledger.open(for: RecipientGroup([Self.bob]))
        #expect(await ledger.outcome(of: late) == .failed([Self.bob: .sessionEnded]))
        #expect(ledger.issued(late) && !ledger.issued(late + 1))
    }

    @Test("Every report is kept from the start and reaches every observer in order, however many, however late")
    func reportLog() async {
        let log = ReportLog<Int>()
        for report in 0..<3_000 { log.append(report) }
        let early = log.stream()
        for report in 3_000..<6_000 { log.append(report) }
        let late = log.stream()
        log.finish()
        log.append(-1)
        var seenEarly: [Int] = []
        for await report in early { seenEarly.append(report) }
        var seenLate: [Int] = []
        for await report in late { seenLate.append(report) }
        #expect(seenEarly == Array(0..<6_000))
        #expect(seenLate == Array(0..<6_000))
    }

    @Test("A recipient mask tracks groups past 64 members, each member once", arguments: [0, 1, 63, 64, 65, 130, 256])
    func mask(count: Int) {
        var mask = RecipientMask(count: count)
        #expect(mask.members == Array(0..<count))
        #expect(mask.isEmpty == (count == 0))
        for number in stride(from: 0, to: count, by: 2) {
            let first = mask.remove(number)
            let again = mask.remove(number)
            #expect(first && !again)
        }
        #expect(mask.members == Array(stride(from: 1, to: count, by: 2)))
        for number in stride(from: 1, to: count, by: 2) {
            let removed = mask.remove(number)
            #expect(removed)
        }
        #expect(mask.isEmpty)
    }

    @Test("Participant changes reach a slow observer in full: 5,000 changes before it reads, none dropped")
    func changesUnbounded() async {
        let fanOut = EventFanOut<Int>(bufferLimit: nil)
        let observer = fanOut.stream()
        for change in 0..<5_000 { fanOut.yield(change) }
        fanOut.finish()
        var seen: [Int] = []
        for await change in observer { seen.append(change) }
        #expect(seen == Array(0..<5_000))
    }
}
