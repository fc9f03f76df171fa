/// A ``Frame`` whose data is owned (copied into arrays), so it can outlive the payload it was decoded
/// from, be stored, sent across tasks, or compared in tests.
///
/// Decode with ``FrameDecoder`` and convert with ``Frame/owned`` only where a copy is really needed;
/// encode with ``withFrame(_:)`` or ``encode(into:)-(inout ByteWriter)``.
public enum OwnedFrame: Hashable, Sendable, WireEncodable, CustomStringConvertible {
    /// PING (0x01).
    case ping
    /// ACK (0x02).
    case ack(AckFrame)
    /// MESSAGE (0x03) with its data copied.
    case message(channel: ChannelID, sequence: MessageSequence, offset: Int, totalLength: Int, data: [UInt8])
    /// DATAGRAM (0x04) with its data copied.
    case datagram(channel: ChannelID, data: [UInt8])
    /// CLOSE (0x05).
    case close(CloseFrame)
    /// MAX_DATA (0x06).
    case maxData(UInt64)
    /// DATA_BLOCKED (0x07).
    case dataBlocked(UInt64)
    /// PATH_CHALLENGE (0x08).
    case pathChallenge(UInt64)
    /// PATH_RESPONSE (0x09).
    case pathResponse(UInt64)
    /// OBSERVED_ADDRESS (0x0A).
    case observedAddress(WireAddress)
    /// CANDIDATES (0x0B).
    case candidates([WireAddress])

    /// Copies a borrowed frame.
    public init(_ frame: Frame) {
        switch frame {
        case .ping: self = .ping
        case .ack(let ack): self = .ack(ack)
        case .message(let fragment):
            self = .message(
                channel: fragment.channel, sequence: fragment.sequence, offset: fragment.offset,
                totalLength: fragment.totalLength, data: fragment.copyData())
        case .datagram(let datagram): self = .datagram(channel: datagram.channel, data: datagram.copyData())
        case .close(let close): self = .close(close)
        case .maxData(let limit): self = .maxData(limit)
        case .dataBlocked(let limit): self = .dataBlocked(limit)
        case .pathChallenge(let data): self = .pathChallenge(data)
        case .pathResponse(let data): self = .pathResponse(data)
        case .observedAddress(let address): self = .observedAddress(address)
        case .candidates(let addresses): self = .candidates(addresses)
        }
    }

    /// Calls `body` with a borrowed ``Frame`` view of this value; the view must not escape `body`.
    public func withFrame<Result, Failure: Error>(
        _ body: (Frame) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        switch self {
        case .ping: return try body(.ping)
        case .ack(let ack): return try body(.ack(ack))
        case .message(let channel, let sequence, let offset, let totalLength, let data):
            return try Self.withBytes(data) { raw throws(Failure) in
                try body(
                    .message(
                        MessageFragment(
                            channel: channel, sequence: sequence, offset: offset, totalLength: totalLength, data: raw)))
            }
        case .datagram(let channel, let data):
            return try Self.withBytes(data) { raw throws(Failure) in
                try body(.datagram(DatagramFrame(channel: channel, data: raw)))
            }
        case .close(let close): return try body(.close(close))
        case .maxData(let limit): return try body(.maxData(limit))
        case .dataBlocked(let limit): return try body(.dataBlocked(limit))
        case .pathChallenge(let data): return try body(.pathChallenge(data))
        case .pathResponse(let data): return try body(.pathResponse(data))
        case .observedAddress(let address): return try body(.observedAddress(address))
        case .candidates(let addresses): return try body(.candidates(addresses))
        }
    }

    /// The encoded length, as ``Frame/encodedLength``.
    public var encodedLength: Int {
        withFrame { $0.encodedLength }
    }

    /// Writes the frame, as ``Frame/encode(into:)-(inout ByteWriter)``.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try withFrame { frame throws(WireError) in try frame.encode(into: &writer) }
    }

    /// A short summary such as `message(ch 3, seq 7, 0+5/5)`.
    public var description: String {
        switch self {
        case .ping: return "ping"
        case .ack(let ack): return "ack(delay \(ack.ackDelay)µs, \(ack.ranges))"
        case .message(let channel, let sequence, let offset, let totalLength, let data):
            return "message(ch \(channel), seq \(sequence), \(offset)+\(data.count)/\(totalLength))"
        case .datagram(let channel, let data): return "datagram(ch \(channel), \(data.count) bytes)"
        case .close(let close): return "close(\(close.code), \"\(close.reason)\")"
        case .maxData(let limit): return "maxData(\(limit))"
        case .dataBlocked(let limit): return "dataBlocked(\(limit))"
        case .pathChallenge(let data): return "pathChallenge(\(data))"
        case .pathResponse(let data): return "pathResponse(\(data))"
        case .observedAddress(let address): return "observedAddress(\(address))"
        case .candidates(let addresses): return "candidates(\(addresses.count))"
        }
    }

    /// Runs `body` on the bytes of `array`, forwarding its typed error.
    private static func withBytes<Result, Failure: Error>(
        _ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let outcome: Swift.Result<Result, Failure> = array.withUnsafeBytes { raw in
            Swift.Result { () throws(Failure) in try body(raw) }
        }
        return try outcome.get()
    }
}

extension Frame {
    /// A copy of this frame that owns its data.
    public var owned: OwnedFrame { OwnedFrame(self) }
}
