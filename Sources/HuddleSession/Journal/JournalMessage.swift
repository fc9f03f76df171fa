import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// The messages journal peers exchange, each one reliable message over the pairwise encrypted connection (so the
/// sender is authenticated by the connection it arrives on). Chunks travel on ``bulkChannel``, everything else on
/// ``controlChannel``, so requests and announcements overtake bulk data and never queue behind it.
///
/// Encoding (integers little-endian, `varint` as in frames): one type byte, then
///
/// | type | message | fields |
/// |---|---|---|
/// | 1 | ANNOUNCE | manifest (``AttachmentManifest``) |
/// | 2 | HAVE | id (16), range count (varint, <= 1,600), ranges: start (varint), length (varint, >= 1) |
/// | 3 | LEAVES_REQUEST | id (16), first leaf (varint), count (varint, 1...512) |
/// | 4 | LEAVES | id (16), first leaf (varint), count (varint, 1...512), count × 32 bytes |
/// | 5 | CHUNK_REQUEST | id (16), index (varint) |
/// | 6 | CHUNK | id (16), index (varint), length (varint, <= 65,536), bytes |
/// | 7 | CHUNK_MISSING | id (16), index (varint) |
/// | 8 | REMOVE | id (16) |
///
/// Unknown type bytes decode as ``unknown(type:)`` so a newer peer's additions are skipped, not fatal.
public enum JournalMessage: Sendable, Equatable {
    /// The channel of every journal message but CHUNK (a control channel: ahead of application messages).
    public static let controlChannel = ChannelID(2)
    /// The channel of CHUNK messages (bulk: behind control and application messages, never starved).
    public static let bulkChannel = ChannelID(200)

    /// An attachment exists (sent to every peer on add, and to every peer that becomes active).
    case announce(AttachmentManifest)
    /// The sender holds the verified leaf list of `id` and additionally these chunks (ranges of indices).
    case have(AttachmentID, ranges: [Range<Int>])
    /// Asks for `count` leaf hashes starting at `first`.
    case leavesRequest(AttachmentID, first: Int, count: Int)
    /// Leaf hashes `first ..< first + count`, flat (32 bytes each).
    case leaves(AttachmentID, first: Int, hashes: [UInt8])
    /// Asks for chunk `index`.
    case chunkRequest(AttachmentID, index: Int)
    /// Chunk `index`.
    case chunk(AttachmentID, index: Int, bytes: [UInt8])
    /// The sender cannot serve chunk `index` (it does not hold it, or no longer knows the attachment).
    case chunkMissing(AttachmentID, index: Int)
    /// The attachment is removed for everyone.
    case remove(AttachmentID)
    /// A message type this version does not know; skipped.
    case unknown(type: UInt8)

    /// The channel this message travels on.
    public var channel: ChannelID {
        if case .chunk = self { return Self.bulkChannel }
        return Self.controlChannel
    }

    // MARK: - Encoding

    /// The encoded message.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .announce(let manifest):
            out.append(1)
            out += manifest.encoded()
        case .have(let id, let ranges):
            out.append(2)
            out += id.bytes
            Self.appendVarInt(ranges.count, to: &out)
            for range in ranges {
                Self.appendVarInt(range.lowerBound, to: &out)
                Self.appendVarInt(range.count, to: &out)
            }
        case .leavesRequest(let id, let first, let count):
            out.append(3)
            out += id.bytes
            Self.appendVarInt(first, to: &out)
            Self.appendVarInt(count, to: &out)
        case .leaves(let id, let first, let hashes):
            out.append(4)
            out += id.bytes
            Self.appendVarInt(first, to: &out)
            Self.appendVarInt(hashes.count / MerkleTree.hashLength, to: &out)
            out += hashes
        case .chunkRequest(let id, let index):
            out.append(5)
            out += id.bytes
            Self.appendVarInt(index, to: &out)
        case .chunk(let id, let index, let bytes):
            out.reserveCapacity(bytes.count + 32)
            out.append(6)
            out += id.bytes
            Self.appendVarInt(index, to: &out)
            Self.appendVarInt(bytes.count, to: &out)
            out += bytes
        case .chunkMissing(let id, let index):
            out.append(7)
            out += id.bytes
            Self.appendVarInt(index, to: &out)
        case .remove(let id):
            out.append(8)
            out += id.bytes
        case .unknown(let type):
            out.append(type)
        }
        return out
    }

    private static func appendVarInt(_ value: Int, to out: inout [UInt8]) {
        var buffer: (UInt64, UInt64) = (0, 0)
        let length = withUnsafeMutableBytes(of: &buffer) { raw -> Int in
            var writer = ByteWriter(raw)
            // Values here are indices and counts far below 2^62, the varint maximum.
            try? writer.writeVarInt(UInt64(max(0, value)))
            return writer.bytesWritten
        }
        withUnsafeBytes(of: &buffer) { out += $0.prefix(length) }
    }

    // MARK: - Decoding

    /// Decodes one message, checking every count against its limit before reading or allocating for it.
    public init(decoding bytes: [UInt8]) throws(JournalError) {
        guard bytes.count <= ProtocolLimits.maxJournalMessageBytes else {
            throw .limitExceeded(what: "journal message", limit: ProtocolLimits.maxJournalMessageBytes)
        }
        let result: Result<JournalMessage, JournalError> = bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            do {
                return .success(try Self.decode(&reader))
            } catch let error as JournalError {
                return .failure(error)
            } catch {
                return .failure(.malformed("\(error)"))
            }
        }
        self = try result.get()
    }

    private static func decode(_ reader: inout ByteReader) throws -> JournalMessage {
        let type = try reader.readUInt8()
        let message: JournalMessage
        switch type {
        case 1:
            message = .announce(try AttachmentManifest(reading: &reader))
        case 2:
            let id = try readID(&reader)
            let count = try reader.readVarInt()
            guard count <= UInt64(ProtocolLimits.maxHaveRanges) else {
                throw JournalError.limitExceeded(what: "HAVE ranges", limit: ProtocolLimits.maxHaveRanges)
            }
            var ranges: [Range<Int>] = []
            ranges.reserveCapacity(Int(count))
            for _ in 0..<count {
                let start = try readIndex(&reader)
                let length = try readIndex(&reader)
                guard length >= 1 else { throw JournalError.malformed("empty HAVE range") }
                ranges.append(start..<(start + length))
            }
            message = .have(id, ranges: ranges)
        case 3:
            let id = try readID(&reader)
            let first = try readIndex(&reader)
            message = .leavesRequest(id, first: first, count: try readLeafCount(&reader))
        case 4:
            let id = try readID(&reader)
            let first = try readIndex(&reader)
            let count = try readLeafCount(&reader)
            message = .leaves(id, first: first, hashes: try reader.readArray(count: count * MerkleTree.hashLength))
        case 5:
            message = .chunkRequest(try readID(&reader), index: try readIndex(&reader))
        case 6:
            let id = try readID(&reader)
            let index = try readIndex(&reader)
            let length = try reader.readVarInt()
            guard length <= UInt64(MerkleTree.chunkSize) else {
                throw JournalError.limitExceeded(what: "chunk", limit: MerkleTree.chunkSize)
            }
            message = .chunk(id, index: index, bytes: try reader.readArray(count: Int(length)))
        case 7:
            message = .chunkMissing(try readID(&reader), index: try readIndex(&reader))
        case 8:
            message = .remove(try readID(&reader))
        default:
            return .unknown(type: type)
        }
        try reader.expectEnd()
        return message
    }

    private static func readID(_ reader: inout ByteReader) throws -> AttachmentID {
        AttachmentID(bytes: try reader.readArray(count: AttachmentID.length))!
    }

    /// A chunk or leaf index (or a range length): no attachment has more than
    /// ``ProtocolLimits/maxAttachmentChunks``, so anything larger is malformed whatever the attachment.
    private static func readIndex(_ reader: inout ByteReader) throws -> Int {
        let value = try reader.readVarInt()
        guard value <= UInt64(ProtocolLimits.maxAttachmentChunks) else {
            throw JournalError.indexOutOfRange(index: value, count: ProtocolLimits.maxAttachmentChunks)
        }
        return Int(value)
    }

    private static func readLeafCount(_ reader: inout ByteReader) throws -> Int {
        let count = try reader.readVarInt()
        guard count >= 1, count <= UInt64(ProtocolLimits.maxLeavesPerMessage) else {
            throw JournalError.limitExceeded(what: "leaves per message", limit: ProtocolLimits.maxLeavesPerMessage)
        }
        return Int(count)
    }
}
