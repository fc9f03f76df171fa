import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// Redundancy where it pays (issue 37, item 3): a duplicated channel's small messages go out twice, in consecutive
/// packets, so the loss of one packet costs the message nothing; large messages and other channels go once.
@Suite("Duplicated channels")
struct DuplicatedChannelTests {
    static let duplicated = ChannelID(17)
    static let plain = ChannelID(16)

    /// `a` and `b` connected, `a` duplicating channel 17.
    static func connected() throws -> (a: Endpoint, b: Endpoint, id: ConnectionID) {
        var configuration = ConnectionConfiguration()
        configuration.duplicatedChannels = [duplicated]
        var (a, b) = try EndpointPair.connected(configuration)
        // Settle the handshake's acknowledgements.
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(30))
        return (a, b, try #require(a.connectionID(for: b.staticKey)))
    }

    static func messages(_ events: [EndpointEvent]) -> [(ChannelID, [UInt8])] {
        events.compactMap { if case .message(_, let channel, let bytes) = $0 { (channel, bytes) } else { nil } }
    }

    @Test("A small message goes in two consecutive packets; losing the first still delivers it, once")
    func smallMessageTwice() throws {
        var (a, b, id) = try Self.connected()
        let now = Instant.zero + .milliseconds(40)
        _ = try a.send(Array(repeating: 7, count: 64), on: Self.duplicated, to: id)
        let sent = EndpointPair.drain(&a, now: now)
        #expect(sent.count == 2, "\(sent.count) packets")
        #expect(a.connection(id)?.statistics.fragmentsDuplicated == 1)
        // The first is lost; the copy arrives and is delivered at once, with no loss recovery needed.
        EndpointPair.deliver([sent[1]], to: &b, from: 1, now: now + .milliseconds(10))
        var delivered = Self.messages(EndpointPair.events(&b))
        #expect(delivered.count == 1 && delivered.first?.1 == Array(repeating: 7, count: 64))
        // The original arriving late is a duplicate: nothing more is delivered.
        EndpointPair.deliver([sent[0]], to: &b, from: 1, now: now + .milliseconds(11))
        delivered = Self.messages(EndpointPair.events(&b))
        #expect(delivered.isEmpty)
    }

    @Test("A message over 1,100 bytes, and a message on another channel, go once")
    func largeAndPlainOnce() throws {
        var (a, _, id) = try Self.connected()
        let now = Instant.zero + .milliseconds(40)
        _ = try a.send(
            Array(repeating: 1, count: ProtocolLimits.maxDuplicatedMessageSize + 1), on: Self.duplicated, to: id)
        #expect(EndpointPair.drain(&a, now: now).count == 1)
        _ = try a.send(Array(repeating: 2, count: 64), on: Self.plain, to: id)
        #expect(EndpointPair.drain(&a, now: now + .milliseconds(1)).count == 1)
        // At the limit it still goes twice.
        _ = try a.send(Array(repeating: 3, count: ProtocolLimits.maxDuplicatedMessageSize), on: Self.duplicated, to: id)
        #expect(EndpointPair.drain(&a, now: now + .milliseconds(2)).count == 2)
        #expect(a.connection(id)?.statistics.fragmentsDuplicated == 1)
    }

    @Test("Ten small messages in one burst: each goes twice and the copies never copy themselves again")
    func burstTwiceOnly() throws {
        var (a, b, id) = try Self.connected()
        let now = Instant.zero + .milliseconds(40)
        for index in 0..<10 { _ = try a.send([UInt8(index)], on: Self.duplicated, to: id) }
        var datagrams: [[UInt8]] = []
        // Drain until nothing more goes: a copy of a copy would never stop.
        for step in 0..<10 {
            let sent = EndpointPair.drain(&a, now: now + .microseconds(Int64(step)))
            if sent.isEmpty { break }
            datagrams += sent
        }
        #expect(a.connection(id)?.statistics.fragmentsDuplicated == 10)
        EndpointPair.deliver(datagrams, to: &b, from: 1, now: now + .milliseconds(10))
        #expect(Self.messages(EndpointPair.events(&b)).map { $0.1 } == (0..<10).map { [UInt8($0)] })
    }
}
