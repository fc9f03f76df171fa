import HuddleProtocol

/// Consecutive datagrams in the outbound buffer that go out as one write: one datagram, or several to the same
/// destination with the same size (the last may be shorter) sent as UDP GSO segments.
struct TransmitRun {
    /// The destination of every datagram in the run.
    let destination: NetworkAddress
    /// Where the run starts in the outbound buffer.
    let start: Int
    /// The size of every datagram but possibly the last.
    let segmentSize: Int
    /// Total bytes.
    var length: Int
    /// Datagrams.
    var count: Int
    /// Set once a shorter datagram ended the run (GSO allows only the last segment to be short).
    var isSealed = false

    /// A run holding one datagram; a `sealed` one takes no other (a Path MTU probe goes out alone).
    init(destination: NetworkAddress, start: Int, length: Int, sealed: Bool = false) {
        self.destination = destination
        self.start = start
        self.segmentSize = length
        self.length = length
        self.count = 1
        self.isSealed = sealed
    }

    /// Appends a datagram of `size` bytes to `destination` if it can share this run's write.
    mutating func append(destination: NetworkAddress, size: Int) -> Bool {
        guard !isSealed, destination == self.destination, size <= segmentSize, size > 0,
            count < TransportConfiguration.maxSegmentsPerWrite,
            length + size <= TransportConfiguration.maxBytesPerSegmentedWrite
        else { return false }
        length += size
        count += 1
        if size < segmentSize { isSealed = true }
        return true
    }
}
