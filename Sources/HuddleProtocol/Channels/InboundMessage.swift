import HuddleWire

/// A message a ``ReceiveChannel`` has received in part or in full but not yet made deliverable.
///
/// The buffer is allocated once, `totalLength` bytes, when the first fragment arrives. A message that arrived whole
/// has no bitmap; an incomplete one tracks received bytes in a ``ReceivedBitmap`` until its last byte arrives.
struct InboundMessage: Sendable {
    /// The message bytes (those not yet received are zero).
    private(set) var bytes: [UInt8]
    /// Which bytes arrived; `nil` once the message is complete.
    private var received: ReceivedBitmap?
    /// How many distinct bytes arrived.
    private var receivedCount: Int

    /// A message of `totalLength` bytes whose first fragment carries `data` at `offset`.
    ///
    /// - Precondition: the fragment lies inside the message.
    init(totalLength: Int, offset: Int, data: UnsafeRawBufferPointer) {
        precondition(offset >= 0 && data.count <= totalLength - offset, "fragment outside its message")
        if data.count == totalLength {
            bytes = Array(data)
            received = nil
        } else {
            bytes = [UInt8](repeating: 0, count: totalLength)
            var bitmap = ReceivedBitmap(length: totalLength)
            _ = bitmap.insert(offset..<offset + data.count)
            received = bitmap
            Self.copy(data, into: &bytes, at: offset)
        }
        receivedCount = data.count
    }

    /// The message's length.
    var totalLength: Int { bytes.count }

    /// Whether every byte arrived.
    var isComplete: Bool { received == nil }

    /// Adds the fragment `data` at `offset` and returns whether it completed the message.
    ///
    /// Throws ``ProtocolViolation/inconsistentFragmentData(channel:sequence:)`` (as a
    /// ``ProtocolError/protocolViolation(_:)``), changing nothing, if it disagrees
    /// with bytes already received. Bytes already received are otherwise ignored.
    ///
    /// - Precondition: the fragment lies inside the message.
    mutating func merge(
        offset: Int, data: UnsafeRawBufferPointer, channel: ChannelID, sequence: UInt64
    ) throws(ProtocolError) -> Bool {
        precondition(offset >= 0 && data.count <= bytes.count - offset, "fragment outside its message")
        let range = offset..<offset + data.count
        let consistent: Bool = bytes.withUnsafeBytes { buffer in
            func matches(_ run: Range<Int>) -> Bool {
                UnsafeRawBufferPointer(rebasing: buffer[run]).elementsEqual(
                    UnsafeRawBufferPointer(rebasing: data[(run.lowerBound - offset)..<(run.upperBound - offset)]))
            }
            guard let received else { return matches(range) }
            var allMatch = true
            received.forEachReceivedRun(in: range) { run in
                if allMatch, !matches(run) { allMatch = false }
            }
            return allMatch
        }
        guard consistent else {
            throw .protocolViolation(.inconsistentFragmentData(channel: channel.rawValue, sequence: sequence))
        }
        guard received != nil else { return false }
        receivedCount += received!.insert(range)
        Self.copy(data, into: &bytes, at: offset)
        guard receivedCount == bytes.count else { return false }
        received = nil
        return true
    }

    private static func copy(_ data: UnsafeRawBufferPointer, into bytes: inout [UInt8], at offset: Int) {
        guard let source = data.baseAddress, !data.isEmpty else { return }
        bytes.withUnsafeMutableBytes { destination in
            destination.baseAddress!.advanced(by: offset).copyMemory(from: source, byteCount: data.count)
        }
    }
}
