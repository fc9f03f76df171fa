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
        // The stream is full at its capacity and holds no more; the rest waits in the engine and the transports.
        let full = await eventually("the reader's stream fills up", within: 20) {
            await guest.engine.bufferedMessageCounts().max() == SessionEngine.subscriptionCapacity
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
}
