/// The flags byte of a transport header.
///
/// No flag is defined yet: every bit is reserved for later protocol versions. Decoding preserves all bits
/// unchanged and encoding writes them as given, so the protocol layer decides what unknown bits mean
/// (the header is authenticated as AEAD associated data, so the bits cannot be altered in transit).
public struct TransportFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The flag bits as sent.
    public var rawValue: UInt8

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
