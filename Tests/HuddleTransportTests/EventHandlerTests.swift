import HuddleProtocol
@_spi(Testing) import HuddleTransport
import HuddleWire
import NIOConcurrencyHelpers
import Testing

/// `UDPEndpointDriver.handleEvents`: events handled on the event loop in batches, with backpressure.
@Suite("UDPEndpointDriver event handler", .serialized)
struct EventHandlerTests {
    struct Seen {
        var messages: [[UInt8]] = []
        var batches = 0
        var largestBatch = 0
        var connected = 0
        /// Stop asking for more once this many messages were seen (until resumed).
        var pauseAt = Int.max
    }

    @Test("Events go to the handler in batches; returning false stops them until resumeEvents()")
    func handlerBatchesAndBackpressure() async throws {
        try await withDriverPair { pair in
            let seen = NIOLockedValueBox(Seen())
            seen.withLockedValue { $0.pauseAt = 10 }
            try await pair.b.handleEvents(maxEvents: 8) { events, endpoint, _ in
                seen.withLockedValue { seen in
                    seen.batches += 1
                    seen.largestBatch = max(seen.largestBatch, events.count)
                    for event in events {
                        switch event {
                        case .message(_, _, let bytes): seen.messages.append(bytes)
                        case .connected: seen.connected += 1
                        default: break
                        }
                    }
                    return seen.messages.count < seen.pauseAt
                }
            }
            var readerA = try await EventReader(pair.a)
            let connection = try await pair.a.connect(to: pair.b.staticKey, at: pair.b.localAddress)
            _ = try await readerA.connected()
            for index in 0..<100 {
                try await pair.a.enqueue(patternMessage(sequence: index, size: 100), on: ChannelID(16), to: connection)
            }
            #expect(await Self.eventually { seen.withLockedValue { $0.messages.count >= 10 } })
            // Paused: no more batches arrive however long we wait.
            try await Task.sleep(for: .milliseconds(300))
            let paused = seen.withLockedValue { $0.messages.count }
            #expect(paused >= 10 && paused < 100, "\(paused) messages while paused")
            try await Task.sleep(for: .milliseconds(200))
            #expect(seen.withLockedValue { $0.messages.count } == paused)

            seen.withLockedValue { $0.pauseAt = .max }
            pair.b.resumeEvents()
            #expect(await Self.eventually { seen.withLockedValue { $0.messages.count } == 100 })
            let result = seen.withLockedValue { $0 }
            #expect(result.connected == 1)
            #expect(result.largestBatch <= 8)
            for index in 0..<100 {
                #expect(result.messages[index] == patternMessage(sequence: index, size: 100), "message \(index)")
            }
        }
    }

    @Test("The handler may send from the event loop: an echo without leaving it")
    func handlerEchoes() async throws {
        try await withDriverPair { pair in
            try await pair.b.handleEvents { events, endpoint, _ in
                for case .message(let id, let channel, let bytes) in events {
                    _ = try? endpoint.send(bytes, on: channel, to: id)
                }
                return true
            }
            var readerA = try await EventReader(pair.a)
            let connection = try await pair.a.connect(to: pair.b.staticKey, at: pair.b.localAddress)
            _ = try await readerA.connected()
            for index in 0..<20 {
                try await pair.a.enqueue(patternMessage(sequence: index, size: 10), on: ChannelID(16), to: connection)
            }
            for index in 0..<20 {
                #expect(try await readerA.message().bytes == patternMessage(sequence: index, size: 10))
            }
        }
    }

    static func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
