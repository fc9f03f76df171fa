/// TURN's ChannelData framing (RFC 8656 12.4): `channel number (2, big-endian) | length (2, big-endian) | data`,
/// used between a client and its TURN server for a peer bound to a channel: 4 bytes of overhead per datagram instead
/// of a Send or Data indication's 36 or more. Over UDP no padding follows the data.
public enum ChannelData {
    /// The header length.
    public static let headerLength = 4
    /// The channel numbers a client may bind (RFC 8656 12).
    public static let channelNumbers: ClosedRange<UInt16> = 0x4000...0x4FFF

    /// Whether `datagram` starts like ChannelData (first two bits 01), which no STUN message does.
    public static func isChannelData(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= headerLength && datagram[0] & 0xC0 == 0x40
    }

    /// Writes the header for `length` bytes of data on `channel` into the first 4 bytes of `buffer`.
    public static func writeHeader(channel: UInt16, length: Int, into buffer: UnsafeMutableRawBufferPointer) {
        precondition(channelNumbers.contains(channel) && length <= 0xFFFF && buffer.count >= headerLength)
        buffer[0] = UInt8(channel >> 8)
        buffer[1] = UInt8(truncatingIfNeeded: channel)
        buffer[2] = UInt8(length >> 8)
        buffer[3] = UInt8(truncatingIfNeeded: length)
    }

    /// The channel number and data range of a ChannelData datagram; trailing padding (which TCP adds and some
    /// servers add over UDP) is ignored.
    public static func parse(
        _ datagram: UnsafeRawBufferPointer
    ) throws(StunError) -> (
        channel: UInt16, data: Range<Int>
    ) {
        guard datagram.count >= headerLength else { throw .truncated }
        let channel = UInt16(datagram[0]) << 8 | UInt16(datagram[1])
        guard channelNumbers.contains(channel) else { throw .invalidChannelNumber(channel) }
        let length = Int(datagram[2]) << 8 | Int(datagram[3])
        guard headerLength + length <= datagram.count else { throw .truncated }
        return (channel, headerLength..<(headerLength + length))
    }
}
