import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// What an attachment is, signed by its author: identifier, size, chunking, Merkle root and application metadata.
/// Every member checks it before fetching anything, and every chunk is then checked against the root.
///
/// Encoding (integers little-endian):
///
/// ```
/// id (16) | size (u64) | chunk size (u32) = 65,536 | chunk count (u32) = ceil(size / 65,536)
/// | root (32) | author Ed25519 key (32) | metadata length (u32, <= 16 KiB) | metadata | signature (64)
/// ```
///
/// The signature is Ed25519 by the author over ``signingContext`` followed by every field before the signature,
/// encoded as above, so a manifest signature can never be mistaken for any other Huddle signature.
public struct AttachmentManifest: Hashable, Sendable {
    /// The domain separator the signature covers first.
    public static let signingContext = Array("huddle attachment manifest v1".utf8)
    /// The length of the encoding without metadata.
    public static let fixedLength = 16 + 8 + 4 + 4 + 32 + 32 + 4 + 64

    /// The attachment's identifier.
    public let id: AttachmentID
    /// The size in bytes (at most ``ProtocolLimits/maxAttachmentSize``).
    public let size: UInt64
    /// The Merkle root over the chunks (``MerkleTree``).
    public let root: [UInt8]
    /// The author's signing key.
    public let author: Ed25519PublicKey
    /// Application metadata (at most ``ProtocolLimits/maxAttachmentMetadataBytes``).
    public let metadata: [UInt8]
    /// The author's signature.
    public let signature: [UInt8]

    /// The chunk size: always ``MerkleTree/chunkSize``.
    public var chunkSize: Int { MerkleTree.chunkSize }
    /// The number of chunks.
    public var chunkCount: Int { Int(MerkleTree.chunkCount(forSize: size)) }

    /// Signs a new manifest. Throws ``JournalError/limitExceeded(what:limit:)`` for a size or metadata over its
    /// limit, and ``JournalError/malformed(_:)`` for a root that is not 32 bytes.
    public init(
        id: AttachmentID, size: UInt64, root: [UInt8], metadata: [UInt8], signingKey: Ed25519PrivateKey
    ) throws(JournalError) {
        try Self.check(size: size, metadataCount: metadata.count)
        guard root.count == MerkleTree.hashLength else { throw .malformed("root is not 32 bytes") }
        guard size > 0 || root == MerkleTree.emptyRoot else {  // hygiene: public value
            throw .malformed("an empty attachment has the empty root")
        }
        self.id = id
        self.size = size
        self.root = root
        self.author = signingKey.publicKey
        self.metadata = metadata
        self.signature = signingKey.signature(
            for: Self.signingContext + Self.body(id: id, size: size, root: root, author: author, metadata: metadata))
    }

    private static func check(size: UInt64, metadataCount: Int) throws(JournalError) {
        guard size <= ProtocolLimits.maxAttachmentSize else {
            throw .attachmentTooLarge(size: size, limit: ProtocolLimits.maxAttachmentSize)
        }
        guard metadataCount <= ProtocolLimits.maxAttachmentMetadataBytes else {
            throw .limitExceeded(what: "attachment metadata", limit: ProtocolLimits.maxAttachmentMetadataBytes)
        }
    }

    private static func body(
        id: AttachmentID, size: UInt64, root: [UInt8], author: Ed25519PublicKey, metadata: [UInt8]
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(fixedLength - 64 + metadata.count)
        out += id.bytes
        append(size, bytes: 8, to: &out)
        append(UInt64(MerkleTree.chunkSize), bytes: 4, to: &out)
        append(MerkleTree.chunkCount(forSize: size), bytes: 4, to: &out)
        out += root
        out += author.bytes
        append(UInt64(metadata.count), bytes: 4, to: &out)
        out += metadata
        return out
    }

    private static func append(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for index in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * index))) }
    }

    /// The encoded manifest.
    public func encoded() -> [UInt8] {
        Self.body(id: id, size: size, root: root, author: author, metadata: metadata) + signature
    }

    /// Decodes a manifest from `reader`, checking the size, chunk size and chunk count against their limits and
    /// the metadata length before reading (so nothing is allocated in proportion to a false claim), then the
    /// signature.
    public init(reading reader: inout ByteReader) throws(JournalError) {
        do {
            let start = reader.offset
            let id = AttachmentID(bytes: try reader.readArray(count: AttachmentID.length))!
            let size = try reader.readUInt64LE()
            let chunkSize = try reader.readUInt32LE()
            let chunkCount = try reader.readUInt32LE()
            guard size <= ProtocolLimits.maxAttachmentSize else {
                throw JournalError.attachmentTooLarge(size: size, limit: ProtocolLimits.maxAttachmentSize)
            }
            guard chunkSize == UInt32(MerkleTree.chunkSize) else {
                throw JournalError.malformed("chunk size \(chunkSize) is not \(MerkleTree.chunkSize)")
            }
            guard UInt64(chunkCount) == MerkleTree.chunkCount(forSize: size) else {
                throw JournalError.malformed("chunk count \(chunkCount) does not match size \(size)")
            }
            let root = try reader.readArray(count: MerkleTree.hashLength)
            guard size > 0 || root == MerkleTree.emptyRoot else {  // hygiene: public value
                throw JournalError.malformed("an empty attachment has the empty root")
            }
            let author = try Ed25519PublicKey(bytes: try reader.readArray(count: Ed25519PublicKey.length))
            let metadataLength = try reader.readUInt32LE()
            guard metadataLength <= UInt32(ProtocolLimits.maxAttachmentMetadataBytes) else {
                throw JournalError.limitExceeded(
                    what: "attachment metadata", limit: ProtocolLimits.maxAttachmentMetadataBytes)
            }
            let metadata = try reader.readArray(count: Int(metadataLength))
            let signed = Self.signingContext + Array(reader.bytes[start..<reader.offset])
            let signature = try reader.readArray(count: Ed25519PrivateKey.signatureLength)
            guard author.isValidSignature(signature, for: signed) else { throw JournalError.badManifest }
            self.id = id
            self.size = size
            self.root = root
            self.author = author
            self.metadata = metadata
            self.signature = signature
        } catch let error as JournalError {
            throw error
        } catch {
            throw .malformed("manifest: \(error)")
        }
    }

    /// Decodes a manifest that is the whole of `bytes`.
    public init(decoding bytes: [UInt8]) throws(JournalError) {
        let result: Result<AttachmentManifest, JournalError> = bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            do throws(JournalError) {
                let manifest = try AttachmentManifest(reading: &reader)
                guard reader.isAtEnd else { throw .malformed("bytes after the manifest") }
                return .success(manifest)
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }
}
