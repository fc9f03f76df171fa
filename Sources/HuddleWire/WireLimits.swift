/// Named limits of the Huddle wire format.
///
/// Every length or count read from the wire is checked against one of these limits (and against the
/// number of bytes actually remaining) before anything is allocated or copied. The values are part of
/// the protocol: a peer that sends a value above a limit is violating the protocol.
public enum WireLimits {
    /// Datagram size used when nothing larger has been validated on the path: 1200 bytes, QUIC's safe
    /// minimum. Senders never exceed it unless a larger path MTU has been probed.
    public static let defaultMaxDatagramSize = 1200

    /// Largest UDP payload that is accepted at all: 8972 bytes (a 9000-byte jumbo-frame MTU minus the IPv4 and
    /// UDP headers), the most Path MTU discovery ever probes. Larger datagrams are rejected by ``PacketClassifier``
    /// before any other work.
    public static let maxDatagramSize = 8972

    /// Largest reliable message, in bytes: 256 KiB. A MESSAGE fragment that claims a larger total length is
    /// rejected with ``WireError/lengthOutOfRange(field:value:limit:)``.
    public static let maxMessageSize = 262_144

    /// Number of channels per connection: channel identifiers are `0 ..< maxChannels`.
    public static let maxChannels = 256

    /// Largest number of ACK ranges in one ACK frame, counting the first range.
    public static let maxAckRanges = 32

    /// Largest CLOSE reason phrase, in UTF-8 bytes.
    public static let maxCloseReasonLength = 256

    /// Most addresses in one CANDIDATES frame.
    public static let maxCandidates = 8

    /// Largest value a QUIC variable-length integer can carry: 2^62 - 1.
    public static let maxVarInt: UInt64 = (1 << 62) - 1
}
