import HuddleProtocol
import NIOCore

/// Hands what one read returned to the endpoint: copies it into a scratch buffer of its own, splits datagrams the
/// kernel glued together (UDP GRO), and lets the endpoint decrypt each in place there.
///
/// The copy is what avoids one: NIO's pooled receive buffer is shared with the pool while `channelRead` runs, so
/// decrypting in it would copy (and allocate) per datagram. Not tied to a channel: a test hands it a `ByteBuffer`.
final class DatagramReceiver {
    /// Room for the largest read: a receive-offload slice of glued datagrams.
    private let scratch: UnsafeMutableRawBufferPointer

    init(capacity: Int = TransportConfiguration.offloadReceiveSliceSize) {
        scratch = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        scratch.deallocate()
    }

    /// Hands the datagrams in `data` from `source` to `endpoint`: one, or with receive offload several of
    /// `segmentSize` bytes each (the last may be shorter), and counts them.
    func receive(
        _ data: ByteBuffer, segmentSize: Int?, from source: NetworkAddress, into endpoint: inout Endpoint,
        now: Instant, statistics: inout TransportStatistics
    ) {
        let length = min(data.readableBytes, scratch.count)
        data.withUnsafeReadableBytes { bytes in
            guard length > 0, let base = bytes.baseAddress else { return }
            scratch.baseAddress!.copyMemory(from: base, byteCount: length)
        }
        // Receive offload glues same-source datagrams; the kernel reports the original size of each but the last.
        let segment = segmentSize.flatMap { $0 > 0 ? $0 : nil } ?? max(length, 1)
        if length > segment { statistics.coalescedReads += 1 }
        var offset = 0
        repeat {
            let size = min(segment, length - offset)
            endpoint.handle(
                datagram: UnsafeMutableRawBufferPointer(rebasing: scratch[offset..<(offset + size)]), from: source,
                now: now)
            statistics.datagramsReceived += 1
            offset += size
        } while offset < length
        statistics.bytesReceived += length
    }
}
