import HuddleProtocol
import NIOCore

/// One flush's datagrams, polled from the endpoint straight into one buffer and grouped into runs that each go out
/// as one write (one datagram, or equal-size neighbours to one destination as UDP GSO segments).
///
/// The buffer is cleared at the start of every collection; its storage is reused whenever the previous flush's
/// writes have completed (SwiftNIO holds slices of it until then). Not tied to a channel: the handler writes the
/// runs, a test inspects them.
struct TransmitBatch {
    /// The datagrams, back to back.
    private(set) var buffer: ByteBuffer
    /// The runs of the batch, in order (kept to reuse its capacity).
    private(set) var runs: [TransmitRun] = []

    /// A batch whose buffer starts with room for `capacity` bytes (it grows once if paths confirm larger datagrams).
    init(capacity: Int, allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        buffer = allocator.buffer(capacity: capacity)
    }

    /// Polls up to `limit` datagrams from `endpoint` into slots of `slotSize` bytes and groups them into runs,
    /// merging neighbours only when `segmenting` (UDP GSO is on and has not failed); returns how many it polled.
    /// A Path MTU probe gets a run of its own that nothing joins: the kernel checks it against the route's MTU, and
    /// the don't-fragment bit applies to it alone.
    mutating func collect(
        from endpoint: inout Endpoint, limit: Int, slotSize: Int, segmenting: Bool, now: Instant
    ) -> Int {
        buffer.clear()
        runs.removeAll(keepingCapacity: true)
        var produced = 0
        while produced < limit {
            var destination: NetworkAddress?
            var alone = false
            let start = buffer.writerIndex
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: slotSize) { space in
                guard
                    let transmit = endpoint.pollTransmit(
                        into: UnsafeMutableRawBufferPointer(rebasing: space[0..<slotSize]), now: now)
                else { return 0 }
                destination = transmit.destination
                alone = transmit.isPathProbe
                return transmit.length
            }
            guard let destination else { break }
            let length = buffer.writerIndex - start
            produced += 1
            if segmenting, !alone, !runs.isEmpty, runs[runs.count - 1].append(destination: destination, size: length) {
                continue
            }
            runs.append(TransmitRun(destination: destination, start: start, length: length, sealed: alone))
        }
        return produced
    }
}
