/// The kind of a Huddle datagram, given by its first byte.
public enum PacketType: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Noise IKpsk2 message 1 (``HandshakeInitiation``), exactly 152 bytes.
    case handshakeInitiation = 1
    /// Noise IKpsk2 message 2 (``HandshakeResponse``), exactly 92 bytes.
    case handshakeResponse = 2
    /// A cookie reply sent under load (``CookieReply``), exactly 64 bytes.
    case cookieReply = 3
    /// An encrypted transport packet (``TransportHeader`` + ciphertext + tag), at least 32 bytes.
    case transportData = 4
    /// A node's registration at a relay (``RelayRegister``), exactly 68 bytes.
    case relayRegister = 5
    /// A relay's challenge to a registration (``RelayChallenge``), exactly 52 bytes.
    case relayChallenge = 6
    /// A relay's confirmation of a registration (``RelayRegistered``), exactly 39 bytes.
    case relayRegistered = 7
    /// A packet for a relay to forward (``RelayEnvelope``), at least 68 bytes.
    case relaySend = 8
    /// A packet a relay forwards (``RelayEnvelope``), at least 68 bytes.
    case relayDeliver = 9
    /// A responder's refusal of an initiation of another protocol revision (``HandshakeRefusal``), exactly 80 bytes.
    case handshakeRefusal = 10

    /// The exact datagram length of the fixed-size handshake types, or `nil` for ``transportData``.
    @inlinable
    public var fixedLength: Int? {
        switch self {
        case .handshakeInitiation: return HandshakeInitiation.encodedLength
        case .handshakeResponse: return HandshakeResponse.encodedLength
        case .cookieReply: return CookieReply.encodedLength
        case .relayRegister: return RelayRegister.encodedLength
        case .relayChallenge: return RelayChallenge.encodedLength
        case .relayRegistered: return RelayRegistered.encodedLength
        case .handshakeRefusal: return HandshakeRefusal.encodedLength
        case .transportData, .relaySend, .relayDeliver: return nil
        }
    }

    /// The smallest valid datagram of this type.
    @inlinable
    public var minimumLength: Int {
        switch self {
        case .relaySend, .relayDeliver: return RelayEnvelope.minimumLength
        default: return fixedLength ?? TransportHeader.minimumPacketLength
        }
    }

    /// The name used in `docs/PROTOCOL.md`.
    public var description: String {
        switch self {
        case .handshakeInitiation: return "handshake initiation"
        case .handshakeResponse: return "handshake response"
        case .cookieReply: return "cookie reply"
        case .transportData: return "transport data"
        case .relayRegister: return "relay register"
        case .relayChallenge: return "relay challenge"
        case .relayRegistered: return "relay registered"
        case .relaySend: return "relay send"
        case .relayDeliver: return "relay deliver"
        case .handshakeRefusal: return "handshake refusal"
        }
    }
}
