/// Names a field of a packet or frame, so that a ``WireError`` can say which field was wrong.
public enum WireField: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A whole UDP datagram.
    case datagram
    /// The channel identifier of a MESSAGE or DATAGRAM frame.
    case channel
    /// The message sequence number of a MESSAGE frame.
    case messageSequence
    /// The total message length of a MESSAGE frame.
    case messageTotalLength
    /// The fragment offset of a MESSAGE frame.
    case fragmentOffset
    /// The fragment data length of a MESSAGE frame.
    case fragmentLength
    /// The payload length of a DATAGRAM frame.
    case datagramLength
    /// The reason phrase length of a CLOSE frame.
    case closeReasonLength
    /// The largest acknowledged packet number of an ACK frame.
    case ackLargest
    /// The ACK delay of an ACK frame.
    case ackDelay
    /// The flow-control limit of a MAX_DATA or DATA_BLOCKED frame.
    case flowControlLimit
    /// The close code of a CLOSE frame.
    case closeCode
    /// The unencrypted ephemeral public key of a handshake message (32 bytes).
    case ephemeral
    /// The encrypted static public key of a handshake initiation (48 bytes).
    case encryptedStatic
    /// The encrypted payload of a handshake initiation: TAI64N timestamp and resumption index (32 bytes).
    case encryptedPayload
    /// The encrypted empty payload of a handshake response (16 bytes).
    case encryptedNothing
    /// The first MAC of a handshake message (16 bytes).
    case mac1
    /// The second (cookie) MAC of a handshake message (16 bytes).
    case mac2
    /// The XChaCha20-Poly1305 nonce of a cookie reply (24 bytes).
    case cookieNonce
    /// The encrypted cookie of a cookie reply (32 bytes).
    case encryptedCookie
    /// The XChaCha20-Poly1305 nonce of a handshake refusal (24 bytes).
    case refusalNonce
    /// The encrypted prologue of a handshake refusal (48 bytes).
    case encryptedPrologue
    /// The family byte of an address (4 or 6).
    case addressFamily
    /// The address bytes of an address (4 or 16).
    case address
    /// The number of addresses in a CANDIDATES frame.
    case candidateCount
    /// A static key in a relay packet (32 bytes).
    case relayKey
    /// The registration token of a relay packet (16 bytes).
    case relayToken
    /// The MAC of a relay packet (16 bytes).
    case relayMAC
    /// The version byte of a PCP or NAT-PMP message (2 or 0).
    case portMappingVersion
    /// The opcode of a PCP or NAT-PMP response.
    case portMappingOpcode

    /// The field's name as used in `docs/PROTOCOL.md`.
    public var description: String { rawValue }
}
