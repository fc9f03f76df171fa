/// How a client reaches its TURN server. Peers are always reached from the server over UDP; this is only the
/// client's own leg.
public enum TurnTransport: String, Hashable, Sendable, CustomStringConvertible {
    /// STUN messages and ChannelData as UDP datagrams (RFC 8656's default).
    case udp
    /// The same messages over one TCP connection (RFC 8656 12.5: ChannelData padded to 4 bytes), for networks that
    /// block outbound UDP. The allocation lives as long as the connection.
    case tcp

    public var description: String { rawValue }
}
