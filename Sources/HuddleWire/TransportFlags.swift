/// The flags byte of a transport header (PROTOCOL.md §2.4).
///
/// Two bits are defined (§7.8); the other six are reserved. Decoding preserves all bits unchanged and encoding writes
/// them as given, so the protocol layer decides what the bits mean (the header is authenticated as AEAD associated
/// data, so the bits cannot be altered in transit). A receiver of the first revision ignores every bit, which is why
/// both defined ones are safe to send to it: the first asks for nothing it must do, the second promises nothing it
/// must check.
public struct TransportFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The flag bits as sent.
    public var rawValue: UInt8

    /// 0x01, IMMEDIATE_ACK: acknowledge this packet at once, without the usual delay. Set on an ack-eliciting packet
    /// after which the sender has nothing more queued (a lone message, the last packet of a burst) and on probes, so
    /// a lost one is found within a round trip instead of the peer's 25 ms acknowledgement delay.
    public static let immediateAck = TransportFlags(rawValue: 0x01)
    /// 0x02, HONORS_IMMEDIATE_ACK: the sender of this packet acknowledges packets flagged IMMEDIATE_ACK at once. A
    /// node sets it on every packet; its peer leaves the acknowledgement delay out of its probe timeout for flagged
    /// packets only once it has seen this bit.
    public static let honorsImmediateAck = TransportFlags(rawValue: 0x02)

    /// Wraps raw flag bits.
    @inlinable
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// The flags as two hexadecimal digits.
    public var description: String {
        let hex = String(rawValue, radix: 16)
        return "0x" + (hex.count < 2 ? "0" + hex : hex)
    }
}
