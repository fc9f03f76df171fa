import HuddleCrypto
import HuddleProtocol

/// Computes an attachment's leaf hashes while its bytes stream past, in pieces of any size, without keeping a
/// chunk: each byte is absorbed once into the current leaf's BLAKE2b state, and a leaf is finished every
/// ``MerkleTree/chunkSize`` bytes. Memory is the leaf list (32 bytes per 64 KiB, 51,200 bytes at 100 MiB).
public struct MerkleLeafHasher: Sendable {
    /// The finished leaf hashes so far, flat (32 bytes each).
    public private(set) var leaves: [UInt8] = []
    /// The bytes absorbed so far.
    public private(set) var byteCount: UInt64 = 0
    private var current: BLAKE2b?
    private var inCurrent = 0

    /// A hasher that has seen nothing.
    public init() {}

    /// Absorbs the next `bytes` of the attachment.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            if current == nil {
                var hasher = try! BLAKE2b(outputLength: MerkleTree.hashLength)
                hasher.update(MerkleTree.leafPrefix)
                current = hasher
                inCurrent = 0
            }
            let take = min(bytes.count - offset, MerkleTree.chunkSize - inCurrent)
            current!.update(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
            inCurrent += take
            offset += take
            if inCurrent == MerkleTree.chunkSize { finishLeaf() }
        }
        byteCount += UInt64(bytes.count)
    }

    /// Absorbs the next `bytes` of the attachment.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Finishes the last (short) chunk and returns the leaf list and the root.
    public consuming func finalize() -> (leaves: [UInt8], root: [UInt8]) {
        if current != nil { finishLeaf() }
        return (leaves, MerkleTree.root(leaves: leaves))
    }

    private mutating func finishLeaf() {
        guard let hasher = current.take() else { return }
        leaves += hasher.finalize()
        inCurrent = 0
    }
}
