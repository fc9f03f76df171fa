import HuddleTestKit
import HuddleWire
import NIOCore
import Testing

@testable import HuddleProtocol
@testable import HuddleTransport

/// How a flush's datagrams are grouped into writes, on a bare endpoint pair.
@Suite("Transmit batching")
struct TransmitBatchTests {
    /// `a` of a connected pair with a 200 kB message queued: many full-size datagrams to one destination.
    static func loaded() throws -> Endpoint {
        var (a, _) = try EndpointPair.connected()
        let connection = try #require(a.connectionIDs.first)
        _ = try a.send([UInt8](repeating: 7, count: 200_000), on: ChannelID(5), to: connection)
        return a
    }

    static let slot = WireLimits.maxDatagramSize + 64

    @Test("With segmentation, equal-size datagrams to one destination share one run; the limit holds")
    func equalSizesShareARun() throws {
        var a = try Self.loaded()
        var batch = TransmitBatch(capacity: 0)
        let produced = batch.collect(from: &a, limit: 8, slotSize: Self.slot, segmenting: true, now: .zero)
        #expect(produced == 8)
        #expect(batch.runs.count == 1, "\(batch.runs.map(\.count))")
        #expect(batch.runs.first?.count == 8)
        #expect(batch.runs.first?.length == batch.buffer.readableBytes)
        #expect(batch.runs.first?.destination == EndpointPair.address(2))
    }

    @Test("Without segmentation every datagram is a run of its own, back to back in the buffer")
    func oneRunPerDatagram() throws {
        var a = try Self.loaded()
        var batch = TransmitBatch(capacity: 0)
        let produced = batch.collect(from: &a, limit: 5, slotSize: Self.slot, segmenting: false, now: .zero)
        #expect(produced == 5)
        #expect(batch.runs.count == 5)
        var offset = 0
        for run in batch.runs {
            #expect(run.start == offset && run.count == 1)
            offset += run.length
        }
        #expect(offset == batch.buffer.readableBytes)
    }

    @Test("A second collection starts from an empty buffer; an idle endpoint gives an empty batch")
    func collectionsStartOver() throws {
        var a = try Self.loaded()
        var batch = TransmitBatch(capacity: 0)
        _ = batch.collect(from: &a, limit: 4, slotSize: Self.slot, segmenting: true, now: .zero)
        let first = batch.buffer.readableBytes
        _ = batch.collect(from: &a, limit: 2, slotSize: Self.slot, segmenting: true, now: .zero)
        #expect(batch.buffer.readableBytes <= first / 2 + Self.slot)
        #expect(batch.runs.first?.start == 0)
        var idle = EndpointPair.endpoint(seed: 5)
        #expect(batch.collect(from: &idle, limit: 4, slotSize: Self.slot, segmenting: true, now: .zero) == 0)
        #expect(batch.runs.isEmpty && batch.buffer.readableBytes == 0)
    }
}
