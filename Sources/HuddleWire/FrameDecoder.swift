/// Iterates the frames of a decrypted transport payload without allocating per frame.
///
/// ```swift
/// var decoder = FrameDecoder(payload)
/// while let frame = try decoder.next() { ... }
/// ```
///
/// PADDING (runs of zero bytes) is skipped and counted in ``paddingLength``. Any malformed frame, an
/// unknown frame type included, throws a ``WireError``; the decoder then stops, and further calls to
/// ``next()`` return `nil`. Every length is checked against its limit and the remaining bytes before
/// any byte it covers is read, and nothing is ever allocated in proportion to a claimed length.
///
/// The decoder borrows `payload`: frames it returns are valid only while the payload's memory is.
public struct FrameDecoder {
    /// The cursor over the payload; its `offset` is where the next frame starts.
    public private(set) var reader: ByteReader
    /// The number of PADDING bytes skipped so far.
    public private(set) var paddingLength: Int = 0
    /// Whether decoding stopped because of an error.
    public private(set) var failed = false

    /// Creates a decoder over a decrypted payload.
    public init(_ payload: UnsafeRawBufferPointer) {
        reader = ByteReader(payload)
    }

    /// Returns the next frame, or `nil` at the end of the payload (or after an error).
    ///
    /// Frame types in ``FrameType/membershipRange`` and ``FrameType/journalRange`` are reserved and, like
    /// every undefined type, throw ``WireError/unknownFrameType(_:)``.
    public mutating func next() throws(WireError) -> Frame? {
        guard !failed else { return nil }
        do {
            return try decodeNext()
        } catch {
            failed = true
            throw error
        }
    }

    private mutating func decodeNext() throws(WireError) -> Frame? {
        while !reader.isAtEnd {
            let type = try reader.readVarInt()
            switch type {
            case FrameType.padding.rawValue:
                let start = reader.offset
                var end = start
                while end < reader.bytes.count, reader.bytes[end] == 0 {
                    end += 1
                }
                try reader.skip(end - start)
                paddingLength += reader.offset - start + 1
            case FrameType.ping.rawValue:
                return .ping
            case FrameType.ack.rawValue:
                return .ack(try AckFrame(decodingBody: &reader))
            case FrameType.message.rawValue:
                return .message(try MessageFragment(decodingBody: &reader))
            case FrameType.datagram.rawValue:
                return .datagram(try DatagramFrame(decodingBody: &reader))
            case FrameType.close.rawValue:
                return .close(try CloseFrame(decodingBody: &reader))
            case FrameType.maxData.rawValue:
                return .maxData(try reader.readVarInt())
            case FrameType.dataBlocked.rawValue:
                return .dataBlocked(try reader.readVarInt())
            case FrameType.pathChallenge.rawValue:
                return .pathChallenge(try reader.readUInt64LE())
            case FrameType.pathResponse.rawValue:
                return .pathResponse(try reader.readUInt64LE())
            case FrameType.observedAddress.rawValue:
                return .observedAddress(try WireAddress(decoding: &reader))
            case FrameType.candidates.rawValue:
                let count = try reader.readVarInt()
                guard count <= WireLimits.maxCandidates else {
                    throw .lengthOutOfRange(
                        field: .candidateCount, value: count, limit: UInt64(WireLimits.maxCandidates))
                }
                var addresses: [WireAddress] = []
                addresses.reserveCapacity(Int(count))
                for _ in 0..<count { addresses.append(try WireAddress(decoding: &reader)) }
                return .candidates(addresses)
            default:
                throw .unknownFrameType(type)
            }
        }
        return nil
    }

    /// Decodes every frame of `payload` into an array (convenient for tests and tools; the frames still
    /// borrow `payload`).
    public static func decodeAll(_ payload: UnsafeRawBufferPointer) throws(WireError) -> [Frame] {
        var decoder = FrameDecoder(payload)
        var frames: [Frame] = []
        while let frame = try decoder.next() {
            frames.append(frame)
        }
        return frames
    }
}
