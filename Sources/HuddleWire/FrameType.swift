/// The type of a frame inside a decrypted transport payload, sent as a variable-length integer.
///
/// Defined types are 0x00-0x0B. The ranges ``membershipRange`` (0x10-0x1F) and ``journalRange``
/// (0x20-0x2F) are reserved for membership and journal frames; until those are specified, they and every
/// other undefined type are rejected with ``WireError/unknownFrameType(_:)`` (as in QUIC, an unknown frame
/// type is a protocol violation, because its length cannot be known).
public struct FrameType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The type number.
    public var rawValue: UInt64

    /// Wraps a type number.
    @inlinable
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// 0x00: padding; a run of zero bytes that decoders skip.
    public static let padding = FrameType(rawValue: 0x00)
    /// 0x01: PING; no body, elicits an acknowledgement.
    public static let ping = FrameType(rawValue: 0x01)
    /// 0x02: ACK; acknowledges ranges of packet numbers.
    public static let ack = FrameType(rawValue: 0x02)
    /// 0x03: MESSAGE; one fragment of a reliable message.
    public static let message = FrameType(rawValue: 0x03)
    /// 0x04: DATAGRAM; an unreliable message.
    public static let datagram = FrameType(rawValue: 0x04)
    /// 0x05: CLOSE; closes the connection with a code and a reason.
    public static let close = FrameType(rawValue: 0x05)
    /// 0x06: MAX_DATA; grants flow-control credit.
    public static let maxData = FrameType(rawValue: 0x06)
    /// 0x07: DATA_BLOCKED; reports that the sender is blocked by flow control.
    public static let dataBlocked = FrameType(rawValue: 0x07)
    /// 0x08: PATH_CHALLENGE; 8 random bytes the receiver echoes in a PATH_RESPONSE, to the address the challenge
    /// came from (path validation).
    public static let pathChallenge = FrameType(rawValue: 0x08)
    /// 0x09: PATH_RESPONSE; echoes a PATH_CHALLENGE's 8 bytes.
    public static let pathResponse = FrameType(rawValue: 0x09)
    /// 0x0A: OBSERVED_ADDRESS; the address the sender sees the receiver's packets come from (a reflexive address).
    public static let observedAddress = FrameType(rawValue: 0x0A)
    /// 0x0B: CANDIDATES; addresses at which the sender may be reachable directly (for hole punching).
    public static let candidates = FrameType(rawValue: 0x0B)

    /// Frame types reserved for membership frames (roster, invitations); not defined yet.
    public static let membershipRange: ClosedRange<UInt64> = 0x10...0x1F
    /// Frame types reserved for journal frames (manifests, chunks); not defined yet.
    public static let journalRange: ClosedRange<UInt64> = 0x20...0x2F

    /// Whether the type lies in ``membershipRange`` or ``journalRange``.
    public var isReserved: Bool {
        Self.membershipRange.contains(rawValue) || Self.journalRange.contains(rawValue)
    }

    /// The frame's name as in `docs/PROTOCOL.md`, or its number in hexadecimal.
    public var description: String {
        switch rawValue {
        case 0x00: return "PADDING"
        case 0x01: return "PING"
        case 0x02: return "ACK"
        case 0x03: return "MESSAGE"
        case 0x04: return "DATAGRAM"
        case 0x05: return "CLOSE"
        case 0x06: return "MAX_DATA"
        case 0x07: return "DATA_BLOCKED"
        case 0x08: return "PATH_CHALLENGE"
        case 0x09: return "PATH_RESPONSE"
        case 0x0A: return "OBSERVED_ADDRESS"
        case 0x0B: return "CANDIDATES"
        default: return "0x" + String(rawValue, radix: 16)
        }
    }
}
