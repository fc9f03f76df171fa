/// The header of a relayed packet: RELAY_SEND (packet type 8, client to relay, naming the destination's static key)
/// and RELAY_DELIVER (type 9, relay to client, naming the source's static key).
///
/// Layout: `type (1) | reserved = 0 (3) | static key (32) | inner packet`, where the inner packet is a whole Huddle
/// datagram of type 1-4, sealed end to end: the relay reads the header only.
public enum RelayEnvelope {
    /// The header length, 36 bytes.
    public static let headerLength = 36
    /// The smallest relayed datagram: a header and the smallest inner packet (a transport packet, 32 bytes).
    public static let minimumLength = headerLength + TransportHeader.minimumPacketLength

    /// Writes the header of an envelope of `type` (``PacketType/relaySend`` or ``PacketType/relayDeliver``) naming
    /// `key` into the first 36 bytes of `buffer`.
    public static func writeHeader(
        _ type: PacketType, key: [UInt8], into buffer: UnsafeMutableRawBufferPointer
    ) {
        precondition(type == .relaySend || type == .relayDeliver, "not an envelope type")
        precondition(key.count == 32 && buffer.count >= headerLength, "envelope header does not fit")
        buffer[0] = type.rawValue
        buffer[1] = 0
        buffer[2] = 0
        buffer[3] = 0
        key.withUnsafeBytes { buffer.baseAddress!.advanced(by: 4).copyMemory(from: $0.baseAddress!, byteCount: 32) }
    }

    /// The key an envelope names (the datagram must have been classified as an envelope).
    public static func key(of datagram: UnsafeRawBufferPointer) -> [UInt8] {
        Array(datagram[4..<headerLength])
    }
}
