import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// Bulk channels take turns (issue 37, item 2): a bulk-priority message (channel 201) does not wait for a journal
/// backlog on channel 200 to finish, nor the other way round.
@Suite("Bulk channels take turns")
struct BulkChannelTurnTests {
    @Test("With 2 MiB queued on channel 200, a message on channel 201 goes in the first congestion window")
    func secondBulkChannelIsNotStarved() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        let id = try #require(a.connectionID(for: b.staticKey))
        let now = Instant.zero + .milliseconds(40)
        EndpointPair.exchange(&a, &b, now: now)
        for _ in 0..<32 { _ = try a.send(Array(repeating: 1, count: 64 * 1024), on: ChannelID(200), to: id) }
        _ = try a.send(Array(repeating: 2, count: 1_000), on: ChannelID(201), to: id)
        // One congestion window's worth: the first packets the connection may send.
        let first = EndpointPair.drain(&a, now: now + .milliseconds(1))
        #expect(!first.isEmpty)
        EndpointPair.deliver(first, to: &b, from: 1, now: now + .milliseconds(2))
        let delivered = EndpointPair.events(&b).compactMap { event -> ChannelID? in
            if case .message(_, let channel, _) = event { channel } else { nil }
        }
        #expect(delivered.contains(ChannelID(201)), "delivered from the first \(first.count) packets: \(delivered)")
        // And channel 200 went too: the turn alternates, it does not swap one starvation for another.
        let carried200 = try #require(a.connection(id)).sendChannels.channels.first { $0.channel == ChannelID(200) }
        #expect((carried200?.queuedBytes ?? 0) > 0)
        #expect(first.count > 2)
    }
}
