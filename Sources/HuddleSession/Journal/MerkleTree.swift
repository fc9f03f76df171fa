import HuddleCrypto
import HuddleProtocol

/// The hash tree over an attachment's chunks: BLAKE2b-256, shaped as in RFC 6962 §2.1 (Certificate Transparency),
/// with distinct prefixes so a leaf can never be passed off as an inner node (second-preimage resistance):
///
/// - leaf `i` = BLAKE2b-256(`0x00` || chunk `i`), chunks of ``chunkSize`` bytes (the last one may be shorter);
/// - node = BLAKE2b-256(`0x01` || left || right), where a list of `n > 1` leaves splits at the largest power of two
///   smaller than `n` (so the tree is left-full, no leaf is duplicated);
/// - the root of one leaf is that leaf;
/// - the root of the empty input (zero chunks) is BLAKE2b-256 of the empty string, as RFC 6962's MTH({}).
///
/// Receivers fetch the leaf list first, check it against the signed root, then check every chunk against its leaf
/// the moment it arrives, so a bad chunk is caught alone and fetched again from someone else.
public enum MerkleTree {
    /// The chunk size: 64 KiB.
    public static let chunkSize = 65_536
    /// The length of every hash: 32 bytes.
    public static let hashLength = 32
    /// The prefix of a leaf hash's input.
    static let leafPrefix: [UInt8] = [0x00]
    /// The prefix of an inner node hash's input.
    static let nodePrefix: [UInt8] = [0x01]

    /// The root of the empty input: BLAKE2b-256("").
    public static let emptyRoot: [UInt8] = BLAKE2b.hash([UInt8]())

    /// The number of chunks `size` bytes split into: ceil(size / ``chunkSize``).
    public static func chunkCount(forSize size: UInt64) -> UInt64 {
        (size + UInt64(chunkSize) - 1) / UInt64(chunkSize)
    }

    /// The length of chunk `index` of an attachment of `size` bytes (every chunk is full but the last).
    public static func chunkLength(index: Int, size: UInt64) -> Int {
        let start = UInt64(index) * UInt64(chunkSize)
        guard start < size else { return 0 }
        return Int(min(UInt64(chunkSize), size - start))
    }

    /// The leaf hash of one chunk.
    public static func leafHash(_ chunk: UnsafeRawBufferPointer) -> [UInt8] {
        // Sizes and keys are constants: initialisation cannot fail.
        var hasher = try! BLAKE2b(outputLength: hashLength)
        hasher.update(leafPrefix)
        hasher.update(chunk)
        return hasher.finalize()
    }

    /// The leaf hash of one chunk.
    public static func leafHash(_ chunk: [UInt8]) -> [UInt8] {
        chunk.withUnsafeBytes { leafHash($0) }
    }

    /// The hash of an inner node.
    static func nodeHash(_ left: ArraySlice<UInt8>, _ right: ArraySlice<UInt8>) -> [UInt8] {
        var hasher = try! BLAKE2b(outputLength: hashLength)
        hasher.update(nodePrefix)
        hasher.update(left)
        hasher.update(right)
        return hasher.finalize()
    }

    /// The root over `leaves`, a flat list of 32-byte leaf hashes (`leaves.count` a multiple of 32).
    public static func root(leaves: [UInt8]) -> [UInt8] {
        precondition(leaves.count % hashLength == 0, "a leaf list is a whole number of 32-byte hashes")
        let count = leaves.count / hashLength
        guard count > 0 else { return emptyRoot }
        // Bottom-up over levels: pair neighbours, carry an odd last node up unchanged. This yields exactly RFC 6962's
        // split-at-the-largest-power-of-two tree, with O(n) hashing and one level of scratch memory.
        var level = leaves
        var width = count
        while width > 1 {
            var next: [UInt8] = []
            next.reserveCapacity((width + 1) / 2 * hashLength)
            var index = 0
            while index + 1 < width {
                let left = level[(index * hashLength)..<((index + 1) * hashLength)]
                let right = level[((index + 1) * hashLength)..<((index + 2) * hashLength)]
                next += nodeHash(left, right)
                index += 2
            }
            if index < width { next += level[(index * hashLength)..<((index + 1) * hashLength)] }
            level = next
            width = (width + 1) / 2
        }
        return level
    }

    /// Whether `leaves` (a flat list of 32-byte hashes) has root `root` and the length `chunkCount` leaves.
    public static func verify(leaves: [UInt8], chunkCount: Int, root: [UInt8]) -> Bool {
        guard leaves.count == chunkCount * hashLength else { return false }
        return ConstantTime.equals(Self.root(leaves: leaves), root)
    }
}
