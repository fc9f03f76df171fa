import HuddleCrypto
import HuddleProtocol
@_spi(Testing) import HuddleTransport
import HuddleWire
import NIOConcurrencyHelpers
import Testing

/// `UDPEndpointDriver.enqueue`: the lock-protected outbound queue drained on the event loop in batches.
@Suite("UDPEndpointDriver outbound queue", .serialized)
struct OutboundQueueTests {
    /// An 8-byte little-endian sequence number followed by `padding` pattern bytes.
    static func numbered(_ sequence: Int, padding: Int = 0) -> [UInt8] {
        withUnsafeBytes(of: UInt64(sequence).littleEndian) { Array($0) }
            + patternMessage(sequence: sequence, size: padding)
    }

    @Test("10,000 messages enqueued from one task without waiting for delivery arrive complete and in order, coalesced")
    func manyEnqueuesKeepOrder() async throws {
        try await withDriverPair(limit: .seconds(90)) { pair in
            var readerA = try await EventReader(pair.a)
            var readerB = try await EventReader(pair.b)
            let connection = try await pair.a.connect(to: pair.b.staticKey, at: pair.b.localAddress)
            _ = try await readerA.connected()
            _ = try await readerB.connected()
            let count = 10_000
            let channel = ChannelID(16)
            let receiver = Task {
                var next = 0
                while next < count {
                    let message = try await readerB.message()
                    #expect(message.channel == channel)
                    guard message.bytes == Self.numbered(next, padding: 56) else {
                        Issue.record("message \(next) differs or is out of order")
                        return next
                    }
                    next += 1
                }
                return next
            }
            for index in 0..<count {
                try await pair.a.enqueue(Self.numbered(index, padding: 56), on: channel, to: connection)
            }
            #expect(try await receiver.value == count)
            let statistics = try await pair.a.statistics()
            #expect(statistics.messagesQueued == count)
            #expect(statistics.messagesUnsent == 0)
            // Messages queued in quick succession are drained together and share datagrams.
            #expect(statistics.outboundDrains < count, "\(statistics.outboundDrains) drains for \(count) messages")
            #expect(statistics.datagramsSent < count / 2, "\(statistics.datagramsSent) datagrams for \(count) messages")
        }
    }

    @Test("send and enqueue on one channel keep their common order")
    func sendAndEnqueueInterleave() async throws {
        try await withDriverPair { pair in
            var readerA = try await EventReader(pair.a)
            var readerB = try await EventReader(pair.b)
            let connection = try await pair.a.connect(to: pair.b.staticKey, at: pair.b.localAddress)
            _ = try await readerA.connected()
            _ = try await readerB.connected()
            for index in 0..<200 {
                if index % 3 == 0 {
                    try await pair.a.send(Self.numbered(index), on: ChannelID(5), to: connection)
                } else {
                    try await pair.a.enqueue(Self.numbered(index), on: ChannelID(5), to: connection)
                }
            }
            for index in 0..<200 {
                #expect(try await readerB.message().bytes == Self.numbered(index), "message \(index)")
            }
        }
    }

    @Test("At the limit: a sender waits once its channel holds the maximum, and resumes as the queue drains")
    func senderWaitsAtTheLimit() async throws {
        var sender = TransportConfiguration()
        sender.maxOutboundMessagesPerChannel = 3
        // The receiver's application reads nothing at first, so flow control stops the sender's endpoint and the
        // outbound queue fills.
        try await withDriverPair(transportA: sender, limit: .seconds(90)) { pair in
            var readerA = try await EventReader(pair.a)
            var readerB = try await EventReader(pair.b, capacity: 2)
            let connection = try await pair.a.connect(to: pair.b.staticKey, at: pair.b.localAddress)
            _ = try await readerA.connected()
            _ = try await readerB.connected()
            let size = 64 * 1024
            let count = 600  // 37.5 MiB: more than the receiver's credit and the sender's 32 MiB channel queue together
            let accepted = NIOLockedValueBox(0)
            let senderTask = Task {
                for index in 0..<count {
                    try await pair.a.enqueue(Self.numbered(index, padding: size - 8), on: ChannelID(9), to: connection)
                    accepted.withLockedValue { $0 += 1 }
                }
            }
            // Wait until the sender is stuck: the queue holds the maximum, the sender waits for room and no longer
            // gets messages accepted. (Sampled, so a loaded machine may need several looks; the queue must never
            // hold more than the maximum at any of them.)
            var stuck = false
            var mostHeld = 0
            var statistics = try await pair.a.statistics()
            for _ in 0..<500 where !stuck {
                try await Task.sleep(for: .milliseconds(20))
                let before = accepted.withLockedValue { $0 }
                statistics = try await pair.a.statistics()
                mostHeld = max(mostHeld, statistics.outboundMessagesHeld)
                try await Task.sleep(for: .milliseconds(20))
                stuck =
                    statistics.queueWaits > 0 && statistics.outboundMessagesHeld == 3
                    && accepted.withLockedValue { $0 } == before
            }
            #expect(stuck, "the sender never waited with the queue full (held \(statistics.outboundMessagesHeld))")
            #expect(mostHeld <= 3, "held \(mostHeld), the limit is 3")
            #expect(statistics.outboundBytesHeld == 3 * size)
            #expect(accepted.withLockedValue { $0 } < count)
            // Reading lets the windows and then the queue drain: the sender resumes and everything arrives in order.
            for index in 0..<count {
                let message = try await readerB.message()
                #expect(message.bytes == Self.numbered(index, padding: size - 8), "message \(index)")
            }
            try await senderTask.value
            #expect(accepted.withLockedValue { $0 } == count)
            statistics = try await pair.a.statistics()
            #expect(statistics.outboundMessagesHeld == 0)
            #expect(statistics.messagesUnsent == 0)
        }
    }

    @Test("A message larger than the byte allowance is accepted when nothing else is held for its channel")
    func oversizedForAllowance() async throws {
        var sender = TransportConfiguration()
        sender.maxOutboundBytesPerChannel = 1_000
        try await withDriverPair(transportA: sender) { pair in
            var readerA = try await EventReader(pair.a)
            var readerB = try await EventReader(pair.b)
            let connection = try await pair.a.connect(to: pair.b.staticKey, at: pair.b.localAddress)
            _ = try await readerA.connected()
            _ = try await readerB.connected()
            for index in 0..<8 {
                try await pair.a.enqueue(
                    Self.numbered(index, padding: WireLimits.maxMessageSize - 8), on: ChannelID(3), to: connection)
            }
            for index in 0..<8 {
                let message = try await readerB.message()
                #expect(message.bytes == Self.numbered(index, padding: WireLimits.maxMessageSize - 8))
            }
            await #expect(throws: TransportError.messageTooLarge(size: 262_145, limit: WireLimits.maxMessageSize)) {
                try await pair.a.enqueue([UInt8](repeating: 0, count: 262_145), on: ChannelID(3), to: connection)
            }
        }
    }

    @Test("Messages still queued when their connection closes are reported as unsent; waiting senders fail")
    func queuedMessagesAreReportedWhenTheConnectionCloses() async throws {
        var sender = TransportConfiguration()
        sender.maxOutboundMessagesPerChannel = 3
        try await withDriverPair(transportA: sender, limit: .seconds(60)) { pair in
            var readerA = try await EventReader(pair.a)
            // A peer that never answers: nothing is ever acknowledged, so the connection's 32 MiB channel queue fills
            // (512 messages of 64 KiB) and the next 3 stay in the driver's queue.
            var random = ChaChaRandomGenerator(seed: 77)
            let silent = Identity(using: &random).agreementKey.publicKey
            try await pair.a.addPeer(
                PeerCredentials(
                    staticKey: silent, presharedKey: SecureBytes(count: 32, using: &random),
                    macSecret: SecureBytes(count: 32, using: &random)))
            let connection = try await pair.a.connect(to: silent, at: NetworkAddress(ipv4: 127, 0, 0, 1, port: 9))
            let size = 64 * 1024
            for index in 0..<(512 + 3) {
                try await pair.a.enqueue(Self.numbered(index, padding: size - 8), on: ChannelID(4), to: connection)
            }
            // Once the channel's window is full the last 3 stay held. (The first 515 may have waited briefly for the
            // event loop to take earlier ones.)
            var filled = try await pair.a.statistics()
            for _ in 0..<250 where filled.sendsSuspended == 0 || filled.outboundMessagesHeld != 3 {
                try await Task.sleep(for: .milliseconds(20))
                filled = try await pair.a.statistics()
            }
            #expect(filled.sendsSuspended == 1 && filled.outboundMessagesHeld == 3)
            let waitsBefore = filled.queueWaits
            let waiting = Task {
                try await pair.a.enqueue(Self.numbered(515, padding: size - 8), on: ChannelID(4), to: connection)
            }
            var statistics = try await pair.a.statistics()
            for _ in 0..<250 where statistics.queueWaits == waitsBefore {
                try await Task.sleep(for: .milliseconds(20))
                statistics = try await pair.a.statistics()
            }
            #expect(statistics.queueWaits == waitsBefore + 1, "the 516th sender did not wait")
            #expect(statistics.outboundMessagesHeld == 3)
            try await pair.a.perform { endpoint, now in
                endpoint.close(connection, code: .noError, reason: "test", now: now)
            }
            await #expect(throws: TransportError.connectionClosed(connection)) { try await waiting.value }
            var unsent: UnsentMessages?
            var undelivered: [UndeliveredMessage]?
            while unsent == nil || undelivered == nil {
                switch try await readerA.next() {
                case .unsent(let report): unsent = report
                case .closed(let id, _, _, let list) where id == connection: undelivered = list
                default: continue
                }
            }
            #expect(
                unsent
                    == UnsentMessages(
                        connection: connection, peer: silent, channel: ChannelID(4), count: 3, bytes: 3 * size,
                        tags: [0, 0, 0]))
            #expect(undelivered?.count == 512)
            statistics = try await pair.a.statistics()
            #expect(statistics.messagesUnsent == 3)
            #expect(statistics.bytesUnsent == 3 * size)
            #expect(statistics.outboundMessagesHeld == 0)
            // Later sends to the closed connection fail at once.
            await #expect(throws: TransportError.connectionClosed(connection)) {
                try await pair.a.enqueue([1], on: ChannelID(4), to: connection)
            }
        }
    }

    @Test("Messages for a peer without a connection are reported as unsent, with their tags; after close() sends fail")
    func peerWithoutConnectionAndClosedDriver() async throws {
        try await withDriverPair { pair in
            var readerA = try await EventReader(pair.a)
            try await pair.a.enqueue([1, 2, 3], on: ChannelID(6), toPeer: pair.b.staticKey, tag: 42)
            let event = try await readerA.next()
            #expect(
                event
                    == .unsent(
                        UnsentMessages(
                            connection: nil, peer: pair.b.staticKey, channel: ChannelID(6), count: 1, bytes: 3,
                            tags: [42])))
            await pair.a.close()
            await #expect(throws: TransportError.driverClosed) {
                try await pair.a.enqueue([4], on: ChannelID(6), toPeer: pair.b.staticKey)
            }
        }
    }

    @Test("Enqueued messages addressed by peer reach it on its current connection")
    func peerAddressedMessagesArrive() async throws {
        try await withDriverPair { pair in
            var readerA = try await EventReader(pair.a)
            var readerB = try await EventReader(pair.b)
            _ = try await pair.a.connect(to: pair.b.staticKey, at: pair.b.localAddress)
            _ = try await readerA.connected()
            _ = try await readerB.connected()
            for index in 0..<100 {
                try await pair.a.enqueue(Self.numbered(index), on: ChannelID(16), toPeer: pair.b.staticKey)
            }
            for index in 0..<100 {
                #expect(try await readerB.message().bytes == Self.numbered(index))
            }
        }
    }
}
