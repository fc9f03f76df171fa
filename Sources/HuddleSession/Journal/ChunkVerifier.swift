import HuddleCrypto
import HuddleProtocol

/// Checks chunks of one attachment against its verified leaf list, anywhere: a driver that reads the store off the
/// event loop (``JournalCore/defersStoreActions``) verifies there what it read, so hashing up to 100 MiB during a
/// resume scan does not stall the loop. A value (the leaf list is shared, not copied).
public struct ChunkVerifier: Sendable {
    /// The verified leaf hashes, flat (``MerkleTree/hashLength`` bytes per chunk).
    let leaves: [UInt8]
    /// The attachment's size in bytes.
    let size: UInt64

    /// A verifier over `leaves`, the leaf list of an attachment of `size` bytes, already checked against its root.
    public init(leaves: [UInt8], size: UInt64) {
        self.leaves = leaves
        self.size = size
    }

    /// Whether `bytes` is chunk `index`: in range, the right length and the right leaf hash (compared in constant
    /// time).
    public func verify(_ bytes: [UInt8], index: Int) -> Bool {
        let length = MerkleTree.hashLength
        guard index >= 0, (index + 1) * length <= leaves.count,
            bytes.count == MerkleTree.chunkLength(index: index, size: size)
        else { return false }
        return ConstantTime.equals(MerkleTree.leafHash(bytes), leaves[(index * length)..<((index + 1) * length)])
    }
}
