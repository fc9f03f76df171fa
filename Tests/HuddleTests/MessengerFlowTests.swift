import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Huddle

/// Many messages through the public API: order, batching and backpressure.
@Suite("Messenger order and backpressure over loopback UDP", .serialized)
struct MessengerFlowTests {
    /// A raw message: a 4-byte little-endian index, then `size - 4` bytes derived from it.
    static func numbered(_ index: Int, size: Int) -> Data {
        var data = Data(count: max(size, 4))
        withUnsafeBytes(of: UInt32(index).littleEndian) { data.replaceSubrange(0..<4, with: $0) }
        for offset in 4..<data.count { data[offset] = UInt8(truncatingIfNeeded: index &+ offset) }
        return data
    }

    @Test("10,000 reliable messages sent from one task without waiting for delivery arrive complete and in order")
    func manyMessagesInOrder() async throws {
        let (host, guest, session, guestSession) = try await MessengerTests.pair(61)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let count = 10_000
        let sender = Messenger(session: session)
        let receiver = Messenger(session: guestSession)
        let received = Task { () -> Int in
            var next = 0
            for await (data, context) in receiver.messages(of: Data.self) {
                guard data == Self.numbered(next, size: 64), context.source == session.localParticipant else {
                    Issue.record("message \(next) differs or is out of order")
                    return next
                }
                next += 1
                if next == count { break }
            }
            return next
        }
        for index in 0..<count {
            try await sender.send(Self.numbered(index, size: 64))
        }
        #expect(try await withTimeout(60, "10,000 messages") { await received.value } == count)
        let statistics = try await host.statistics()
        #expect(statistics.messagesQueued >= count)
        #expect(statistics.messagesUnsent == 0)
    }

    @Test("A reader that stops holds the sender back without losing anything; reading again resumes it")
    func slowReaderHoldsSenderBack() async throws {
        let (host, guest, session, guestSession) = try await MessengerTests.pair(71)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        // 6,000 x 16 KiB = 94 MiB: far more than the reader's stream (1024 messages: 16 MiB), the engine's pending
        // events, the receiver's window (up to 16 MiB once auto-tuned), the sender's channel queue (32 MiB) and its
        // transport's outbound queue (1 MiB) hold together: about 66 MiB.
        let count = 6_000
        let size = 16 * 1024
        let sender = Messenger(session: session)
        let receiver = Messenger(session: guestSession)
        let accepted = NIOLockedValueBox(0)
        let sending = Task {
            for index in 0..<count {
                try await sender.send(Self.numbered(index, size: size))
                accepted.withLockedValue { $0 += 1 }
            }
        }
        // The reader takes the first message (that creates the subscription), then nothing until the gate opens.
        let (gate, open) = AsyncStream<Void>.makeStream()
        let firstRead = NIOLockedValueBox(false)
        let reader = Task { () -> Int in
            var stream = receiver.messages(of: Data.self).makeAsyncIterator()
            guard let (first, _) = await stream.next(), first == Self.numbered(0, size: size) else {
                Issue.record("the first message is missing or differs")
                return 0
            }
            firstRead.withLockedValue { $0 = true }
            for await _ in gate { break }
            var next = 1
            while next < count, let (data, _) = await stream.next() {
                guard data == Self.numbered(next, size: size) else {
                    Issue.record("message \(next) differs or is out of order")
                    return next
                }
                next += 1
            }
            return next
        }
        #expect(await eventually("the first message is read") { firstRead.withLockedValue { $0 } })
        // Wait until the sender makes no more progress for a second (on a loaded machine a 200 ms pause can be the
        // transfer still filling the windows).
        var last = -1
        var quietSamples = 0
        for _ in 0..<150 where quietSamples < 5 {
            try await Task.sleep(for: .milliseconds(200))
            let now = accepted.withLockedValue { $0 }
            quietSamples = now == last ? quietSamples + 1 : 0
            last = now
        }
        #expect(quietSamples >= 5, "the sender never stopped")
        #expect(last < count, "every message was accepted while nobody read")
        // The stream is full at its capacity and holds no more; the rest waits in the engine and the transports. (One
        // less when the stream filled before the reader took the first message: a producer waits until half the
        // stream is read, so that one free place stays free.)
        let full = await eventually("the reader's stream fills up", within: 20) {
            let held = await guest.engine.bufferedMessageCounts().max() ?? 0
            return (SessionEngine.subscriptionCapacity - 1...SessionEngine.subscriptionCapacity).contains(held)
        }
        let buffered = await guest.engine.bufferedMessageCounts()
        #expect(full, "\(buffered)")
        // Reading again lets everything through, in order.
        open.yield()
        let rest = try await withTimeout(120, "the remaining messages") { await reader.value }
        #expect(rest == count)
        try await sending.value
        #expect(accepted.withLockedValue { $0 } == count)
    }

    @Test("A flood sent before the receiver subscribes waits for the subscription instead of being dropped")
    func floodBeforeSubscribing() async throws {
        let (host, guest, session, guestSession) = try await MessengerTests.pair(81)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        // Three times what the engine keeps for subscriptions that do not exist yet.
        let count = 3 * SessionEngine.maxUnclaimedMessages
        let sender = Messenger(session: session)
        let sending = Task {
            for index in 0..<count { try await sender.send(Self.numbered(index, size: 64)) }
        }
        // Nobody reads until the unclaimed buffer is full: the receiver then holds the sender back.
        let filled = await eventually("the unclaimed buffer fills up") {
            await guest.engine.unclaimedCount == SessionEngine.maxUnclaimedMessages
        }
        #expect(filled)
        var next = 0
        for await (data, _) in Messenger(session: guestSession).messages(of: Data.self) {
            guard data == Self.numbered(next, size: 64) else {
                Issue.record("message \(next) differs or is out of order")
                break
            }
            next += 1
            if next == count { break }
        }
        #expect(next == count)
        #expect(await guest.engine.router.droppedCount == 0)
        try await sending.value
    }

    @Test("Messages of a type nobody reads hold the session back once, for the grace period, then are dropped")
    func unreadTypeIsDroppedAfterGrace() async throws {
        let (host, guest, session, guestSession) = try await MessengerTests.pair(91)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let overflow = 100
        // The drops reach the application: every dropped message is counted in a report on messageDrops.
        let drops = NIOLockedValueBox<[MessageDrop]>([])
        let dropReader = Task {
            for await drop in guestSession.messageDrops { drops.withLockedValue { $0.append(drop) } }
        }
        defer { dropReader.cancel() }
        let reported: @Sendable () -> Int = { drops.withLockedValue { $0.reduce(0) { $0 + $1.count } } }
        let sender = Messenger(session: session)
        // Timed from before the flood: on a loaded machine the sends themselves can outlast the grace period (the
        // hold reaches the sender through flow control), and a clock started after them would miss the hold.
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<(SessionEngine.maxUnclaimedMessages + overflow) {
            try await sender.send(Self.numbered(index, size: 64))
        }
        // A message of another type behind them, read by its own subscription (a codable type, not raw bytes).
        let strokes = NIOLockedValueBox<[Int]>([])
        let reader = Task {
            for await (stroke, _) in Messenger(session: guestSession).messages(of: StrokeMessage.self) {
                strokes.withLockedValue { $0.append(stroke.id) }
            }
        }
        defer { reader.cancel() }
        try await sender.send(StrokeMessage(id: 1))
        #expect(
            await eventually("the message behind the unread ones", within: 30) { strokes.withLockedValue { $0 } == [1] }
        )
        let waited = clock.now - start
        #expect(waited >= SessionEngine.unclaimedGracePeriod - .milliseconds(100), "\(waited)")
        #expect(await guest.engine.router.droppedCount == overflow)
        #expect(await eventually("the drops are reported") { reported() == overflow })
        #expect(
            drops.withLockedValue {
                $0.allSatisfy {
                    $0.reason == .noSubscriber && $0.reliable && $0.participant == session.localParticipant
                        && $0.typeName != nil
                }
            })
        // The grace is spent: more unread messages are dropped at once instead of pausing again.
        let again = clock.now
        for index in 0..<overflow { try await sender.send(Self.numbered(index, size: 64)) }
        try await sender.send(StrokeMessage(id: 2))
        #expect(await eventually("the next message", within: 30) { strokes.withLockedValue { $0 } == [1, 2] })
        #expect(clock.now - again < SessionEngine.unclaimedGracePeriod, "paused again")
        #expect(await guest.engine.router.droppedCount == 2 * overflow)
        #expect(await eventually("the second drops are reported") { reported() == 2 * overflow })
    }

    struct StrokeMessage: Codable, Sendable {
        var id: Int
    }

    /// Two versions of one message type, agreeing on the wire name; the second needs a field the first lacks.
    struct PenV1: Codable, Sendable, MessageTypeNaming {
        static let messageTypeName = "test.pen"
        var width: Int
    }

    struct PenV2: Codable, Sendable, MessageTypeNaming {
        static let messageTypeName = "test.pen"
        var width: Int
        var color: String
    }

    @Test("A message its stream cannot decode as its type is skipped and reported as a type mismatch")
    func typeMismatchIsReported() async throws {
        let (host, guest, session, guestSession) = try await MessengerTests.pair(93)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let drops = NIOLockedValueBox<[MessageDrop]>([])
        let dropReader = Task {
            for await drop in guestSession.messageDrops { drops.withLockedValue { $0.append(drop) } }
        }
        defer { dropReader.cancel() }
        let received = NIOLockedValueBox<[PenV2]>([])
        let reader = Task {
            for await (pen, _) in Messenger(session: guestSession).messages(of: PenV2.self) {
                received.withLockedValue { $0.append(pen) }
            }
        }
        defer { reader.cancel() }
        let sender = Messenger(session: session)
        try await sender.send(PenV1(width: 1))
        try await sender.send(PenV2(width: 2, color: "red"))
        #expect(await eventually("the decodable one arrives") { received.withLockedValue { $0.map(\.width) } == [2] })
        #expect(await eventually("the other is reported") { drops.withLockedValue { $0.count } == 1 })
        let drop = drops.withLockedValue { $0.first }
        #expect(
            drop?.reason == .typeMismatch && drop?.typeName == "test.pen" && drop?.count == 1
                && drop?.participant == session.localParticipant && drop?.reliable == true,
            "\(String(describing: drop))")
    }
}
