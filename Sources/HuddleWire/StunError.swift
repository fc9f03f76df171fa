/// Why bytes are not an acceptable STUN message or ChannelData frame.
public enum StunError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Shorter than the 20-byte header, or than the length the header or an attribute announces.
    case truncated
    /// The first two bits are not zero, the magic cookie is missing, or the length is not a multiple of 4.
    case notStun
    /// The message's length field does not match the datagram: `declared` attribute bytes, `actual` present.
    case lengthMismatch(declared: Int, actual: Int)
    /// The FINGERPRINT attribute does not match the message's CRC-32.
    case fingerprintMismatch
    /// An attribute of `type` has a value of the wrong size or content.
    case malformedAttribute(type: UInt16)
    /// A ChannelData frame names a number outside 0x4000-0x4FFF.
    case invalidChannelNumber(UInt16)
    /// On a TCP or TLS stream, a frame starts with `firstByte`, whose top two bits are neither a STUN message's 00
    /// nor ChannelData's 01: the stream has lost its framing.
    case invalidStreamFrame(firstByte: UInt8)

    public var description: String {
        switch self {
        case .truncated: return "truncated STUN message"
        case .notStun: return "not a STUN message (no magic cookie, or a length not a multiple of 4)"
        case .lengthMismatch(let declared, let actual):
            return "STUN length field says \(declared) attribute bytes, the datagram has \(actual)"
        case .fingerprintMismatch: return "STUN FINGERPRINT does not match"
        case .malformedAttribute(let type): return "malformed STUN attribute 0x\(String(type, radix: 16))"
        case .invalidChannelNumber(let number):
            return "TURN channel number 0x\(String(number, radix: 16)) is not 0x4000-0x4FFF"
        case .invalidStreamFrame(let byte):
            return "a TURN stream frame starts with 0x\(String(byte, radix: 16)), neither STUN nor ChannelData"
        }
    }
}
