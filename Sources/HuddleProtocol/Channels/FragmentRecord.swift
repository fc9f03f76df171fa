import HuddleWire

/// Which bytes of which reliable message one MESSAGE frame carried: the connection's per-packet memory of a fragment.
///
/// A ``SendChannel`` returns one from ``SendChannel/nextFragment(maxDataLength:newDataCredit:incompleteMessages:)``
/// for every fragment it wants sent. The connection encodes the frame with ``SendChannel/withFragment(for:_:)`` (or
/// ``SendChannel/data(for:)``), stores the record with the packet it went into, and hands it back to
/// ``SendChannel/onLost(_:)`` when that packet is declared lost (once) and to
/// ``SendChannel/onAcknowledged(_:incompleteMessages:)`` when it is acknowledged (even after a spurious loss). The record holds no message bytes, only numbers (24 bytes of
/// stride), so keeping a few per sent packet is cheap; the bytes stay in the channel until the message is
/// acknowledged in full.
///
/// Invariant: `0 <= offset`, `offset + length <= totalLength <= WireLimits.maxMessageSize`.
public struct FragmentRecord: Hashable, Sendable, CustomStringConvertible {
    /// The message's sequence number within its channel.
    public let sequence: MessageSequence
    private let offset32: UInt32
    private let length32: UInt32
    private let totalLength32: UInt32
    /// The channel the message belongs to.
    public let channel: ChannelID

    /// A record of bytes `offset ..< offset + length` of message `sequence` (of `totalLength` bytes) on `channel`.
    ///
    /// - Precondition: `0 <= offset`, `0 <= length`, `offset + length <= totalLength <= WireLimits.maxMessageSize`.
    public init(channel: ChannelID, sequence: MessageSequence, offset: Int, length: Int, totalLength: Int) {
        precondition(
            offset >= 0 && length >= 0 && totalLength <= WireLimits.maxMessageSize && length <= totalLength - offset,
            "fragment \(offset)+\(length) outside a message of \(totalLength) bytes")
        self.channel = channel
        self.sequence = sequence
        self.offset32 = UInt32(offset)
        self.length32 = UInt32(length)
        self.totalLength32 = UInt32(totalLength)
    }

    /// The offset of the fragment's first byte within its message.
    public var offset: Int { Int(offset32) }

    /// The number of message bytes the fragment carries (0 only for an empty message).
    public var length: Int { Int(length32) }

    /// The length of the whole message.
    public var totalLength: Int { Int(totalLength32) }

    /// The message bytes the fragment covers, `offset ..< offset + length`.
    public var range: Range<Int> { offset..<offset + length }

    /// Whether the fragment carries the whole message (so it needs no reassembly).
    public var isWholeMessage: Bool { length32 == totalLength32 }

    /// `channel/sequence[offset..<end] of totalLength`.
    public var description: String {
        "\(channel)/\(sequence)[\(offset)..<\(offset + length)] of \(totalLength)"
    }
}
