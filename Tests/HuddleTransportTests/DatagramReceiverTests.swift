import HuddleTestKit
import HuddleWire
import NIOCore
import Testing

@testable import HuddleProtocol
@testable import HuddleTransport

/// Reads to the endpoint, on a bare endpoint pair: what the kernel's receive offload glues is split again.
@Suite("Datagram receive")
struct DatagramReceiverTests {
    /// `a`'s datagrams carrying one 5,000-byte message to `b`, and `b`.
    static func datagrams() throws -> (datagrams: [[UInt8]], b: Endpoint) {
        var (a, b) = try EndpointPair.connected()
        while b.pollEvent() != nil {}
        let connection = try #require(a.connectionIDs.first)
        _ = try a.send([UInt8](repeating: 9, count: 5_000), on: ChannelID(5), to: connection)
        return (EndpointPair.drain(&a, now: .zero), b)
    }

    static func message(in b: inout Endpoint) -> [UInt8]? {
        while let event = b.pollEvent() {
            if case .message(_, ChannelID(5), let bytes) = event { return bytes }
        }
        return nil
    }

    @Test("Datagrams glued by receive offload are split at the segment size, each handed over once")
    func gluedDatagramsAreSplit() throws {
        var (datagrams, b) = try Self.datagrams()
        try #require(datagrams.count >= 3)
        let size = datagrams[0].count
        try #require(datagrams.dropLast().allSatisfy { $0.count == size }, "equal sizes but the last")
        var glued = ByteBuffer()
        for datagram in datagrams { glued.writeBytes(datagram) }
        let receiver = DatagramReceiver()
        var statistics = TransportStatistics(endpoint: EndpointStatistics())
        let before = b.statistics.datagramsReceived
        receiver.receive(
            glued, segmentSize: size, from: EndpointPair.address(1), into: &b, now: .zero, statistics: &statistics)
        #expect(statistics.datagramsReceived == datagrams.count)
        #expect(statistics.coalescedReads == 1)
        #expect(statistics.bytesReceived == glued.readableBytes)
        #expect(b.statistics.datagramsReceived - before == UInt64(datagrams.count))
        #expect(Self.message(in: &b) == [UInt8](repeating: 9, count: 5_000))
    }

    @Test("Without a segment size a read is one datagram, and the caller's buffer is left as it was")
    func plainReads() throws {
        var (datagrams, b) = try Self.datagrams()
        let receiver = DatagramReceiver()
        var statistics = TransportStatistics(endpoint: EndpointStatistics())
        for datagram in datagrams {
            let buffer = ByteBuffer(bytes: datagram)
            receiver.receive(
                buffer, segmentSize: nil, from: EndpointPair.address(1), into: &b, now: .zero,
                statistics: &statistics)
            #expect(Array(buffer.readableBytesView) == datagram, "decrypted in the scratch buffer, not in place")
        }
        #expect(statistics.datagramsReceived == datagrams.count)
        #expect(statistics.coalescedReads == 0)
        #expect(Self.message(in: &b) == [UInt8](repeating: 9, count: 5_000))
    }
}
