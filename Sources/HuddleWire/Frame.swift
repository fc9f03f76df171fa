/// One frame of a decrypted transport payload.
///
/// A payload is a sequence of frames, each starting with its ``FrameType`` as a variable-length integer.
/// ``FrameDecoder`` yields them one by one (skipping PADDING); ``encode(into:)-(inout ByteWriter)``
/// writes one, and ``encodedLength`` tells its size beforehand. Padding is written with
/// ``encodePadding(count:into:)``.
///
/// MESSAGE and DATAGRAM frames carry borrowed views of their data (see ``MessageFragment`` and
/// ``DatagramFrame``), so a `Frame` decoded from a payload is valid only while that payload's memory is.
public enum Frame: Equatable, WireEncodable {
    /// PING (0x01): no body; makes the receiver acknowledge the packet.
    case ping
    /// ACK (0x02): acknowledged packet-number ranges.
    case ack(AckFrame)
    /// MESSAGE (0x03): a fragment of a reliable message.
    case message(MessageFragment)
    /// DATAGRAM (0x04): an unreliable message.
    case datagram(DatagramFrame)
    /// CLOSE (0x05): the sender closes the connection.
    case close(CloseFrame)
    /// MAX_DATA (0x06): the largest byte offset, counted over all reliable message data the receiver
    /// has been sent on this connection, that the sender of this frame allows (flow-control credit).
    case maxData(UInt64)
    /// DATA_BLOCKED (0x07): the sender has data to send but is blocked at this flow-control limit.
    case dataBlocked(UInt64)
    /// PATH_CHALLENGE (0x08): 8 bytes (read as a little-endian integer) to be echoed.
    case pathChallenge(UInt64)
    /// PATH_RESPONSE (0x09): the 8 bytes of the PATH_CHALLENGE it answers.
    case pathResponse(UInt64)
    /// OBSERVED_ADDRESS (0x0A): the address the sender sees the receiver at.
    case observedAddress(WireAddress)
    /// CANDIDATES (0x0B): a count (at most ``WireLimits/maxCandidates``) and that many addresses.
    case candidates([WireAddress])

    /// The frame's type.
    public var frameType: FrameType {
        switch self {
        case .ping: return .ping
        case .ack: return .ack
        case .message: return .message
        case .datagram: return .datagram
        case .close: return .close
        case .maxData: return .maxData
        case .dataBlocked: return .dataBlocked
        case .pathChallenge: return .pathChallenge
        case .pathResponse: return .pathResponse
        case .observedAddress: return .observedAddress
        case .candidates: return .candidates
        }
    }

    /// The exact number of bytes ``encode(into:)-(inout ByteWriter)`` writes, including the type.
    public var encodedLength: Int {
        switch self {
        case .ping: return 1
        case .ack(let frame): return frame.encodedLength
        case .message(let frame): return frame.encodedLength
        case .datagram(let frame): return frame.encodedLength
        case .close(let frame): return frame.encodedLength
        case .maxData(let limit), .dataBlocked(let limit): return 1 + VarInt.encodedLength(of: limit)
        case .pathChallenge, .pathResponse: return 9
        case .observedAddress(let address): return 1 + address.encodedLength
        case .candidates(let addresses):
            return 1 + VarInt.encodedLength(of: UInt64(addresses.count)) + addresses.reduce(0) { $0 + $1.encodedLength }
        }
    }

    /// Writes the frame, type first.
    ///
    /// Throws ``WireError/bufferTooSmall(needed:available:)`` when out of room, or the frame's own
    /// validation error (a limit exceeded, a value above 2^62 - 1).
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        switch self {
        case .ping:
            try writer.writeVarInt(FrameType.ping.rawValue)
        case .ack(let frame):
            try frame.encode(into: &writer)
        case .message(let frame):
            try frame.encode(into: &writer)
        case .datagram(let frame):
            try frame.encode(into: &writer)
        case .close(let frame):
            try frame.encode(into: &writer)
        case .maxData(let limit), .dataBlocked(let limit):
            guard limit <= WireLimits.maxVarInt else {
                throw .varIntOutOfRange(limit)
            }
            try writer.require(encodedLength)
            try writer.writeVarInt(frameType.rawValue)
            try writer.writeVarInt(limit)
        case .pathChallenge(let data), .pathResponse(let data):
            try writer.require(encodedLength)
            try writer.writeVarInt(frameType.rawValue)
            try writer.writeUInt64LE(data)
        case .observedAddress(let address):
            try writer.require(encodedLength)
            try writer.writeVarInt(frameType.rawValue)
            try address.encode(into: &writer)
        case .candidates(let addresses):
            guard addresses.count <= WireLimits.maxCandidates else {
                throw .lengthOutOfRange(
                    field: .candidateCount, value: UInt64(addresses.count), limit: UInt64(WireLimits.maxCandidates))
            }
            try writer.require(encodedLength)
            try writer.writeVarInt(frameType.rawValue)
            try writer.writeVarInt(UInt64(addresses.count))
            for address in addresses { try address.encode(into: &writer) }
        }
    }

    /// Writes `count` PADDING bytes (zeros). Decoders skip them; padding is only useful at the end of a
    /// payload or before a non-zero frame type, which is every defined type.
    public static func encodePadding(count: Int, into writer: inout ByteWriter) throws(WireError) {
        try writer.writeZeros(count: count)
    }
}
