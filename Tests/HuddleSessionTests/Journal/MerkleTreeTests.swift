import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@Suite("Merkle tree")
struct MerkleTreeTests {
    /// Roots computed independently with Python's hashlib.blake2b(digest_size=32) and the recursive RFC 6962
    /// definition (leaf = H(0x00 || chunk), node = H(0x01 || left || right), split at the largest power of two
    /// below n, empty = H("")), over ``JournalFixtures/data(_:)``.
    static let vectors: [(size: Int, root: String)] = [
        (0, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"),
        (1, "9ee6dfb61a2fb903df487c401663825643bb825d41695e63df8af6162ab145a6"),
        (65_535, "2de441119e6ed292c5b15b7796582cf5bf31ec526c02a85abcfea187feb195b9"),
        (65_536, "7fc5055485bb7f732e93bbdec96aedbb370158aa02f3eda8cec5bfd3a07abe28"),
        (65_537, "2d28bc6c71d3f10c42b3740c2a2526d5260cff3225b998927b67630c66653e6e"),
        (3 * 65_536 + 5, "f1e5dd897d27f1af1c47b9360d26fd48d2971106ec2866ababb79efead21261d"),
        (7 * 65_536, "2c49a5d9aa2825e1732baa8dd7bbda408231531b3b93092928a55c105f127ab4"),
    ]

    @Test("Roots match independently computed vectors (empty, 1 byte, around one chunk, odd trees)")
    func vectors() {
        for vector in Self.vectors {
            let data = JournalFixtures.data(vector.size)
            let (leaves, root) = JournalFixtures.leaves(data)
            #expect(root == JournalFixtures.hex(vector.root), "size \(vector.size)")
            #expect(leaves.count / 32 == Int(MerkleTree.chunkCount(forSize: UInt64(vector.size))))
            #expect(MerkleTree.root(leaves: leaves) == root)
        }
        #expect(MerkleTree.emptyRoot == BLAKE2b.hash([UInt8]()))
    }

    @Test("Streaming in pieces of any size gives the same leaves as whole chunks")
    func streaming() {
        let data = JournalFixtures.data(3 * 65_536 + 5)
        var whole: [UInt8] = []
        for start in stride(from: 0, to: data.count, by: MerkleTree.chunkSize) {
            whole += MerkleTree.leafHash(Array(data[start..<min(start + MerkleTree.chunkSize, data.count)]))
        }
        for piece in [1, 1000, 65_535, 65_536, 65_537, 200_000] {
            var hasher = MerkleLeafHasher()
            var offset = 0
            while offset < data.count {
                hasher.update(Array(data[offset..<min(offset + piece, data.count)]))
                offset += piece
            }
            #expect(hasher.byteCount == UInt64(data.count))
            #expect(hasher.finalize().leaves == whole, "piece \(piece)")
        }
    }

    @Test("Verification fails for a changed, missing, extra or reordered leaf, and a leaf is not a node")
    func verification() {
        let (leaves, root) = JournalFixtures.leaves(JournalFixtures.data(5 * 65_536))
        #expect(MerkleTree.verify(leaves: leaves, chunkCount: 5, root: root))
        var changed = leaves
        changed[40] ^= 1
        #expect(!MerkleTree.verify(leaves: changed, chunkCount: 5, root: root))
        #expect(!MerkleTree.verify(leaves: Array(leaves.prefix(128)), chunkCount: 4, root: root))
        #expect(!MerkleTree.verify(leaves: leaves + leaves.prefix(32), chunkCount: 6, root: root))
        #expect(!MerkleTree.verify(leaves: leaves, chunkCount: 4, root: root))
        let swapped = Array(leaves[32..<64]) + Array(leaves[0..<32]) + Array(leaves[64...])
        #expect(!MerkleTree.verify(leaves: swapped, chunkCount: 5, root: root))
        // Two leaves' node hash presented as one leaf does not give the same root (distinct prefixes).
        let two = JournalFixtures.leaves(JournalFixtures.data(2 * 65_536))
        #expect(MerkleTree.root(leaves: two.root) != two.root || two.leaves.count != 32)
        #expect(MerkleTree.leafHash(two.leaves) != two.root)
    }

    @Test("Chunk counts and lengths at the chunk boundaries and at the size limit")
    func chunking() {
        #expect(MerkleTree.chunkCount(forSize: 0) == 0)
        #expect(MerkleTree.chunkCount(forSize: 1) == 1)
        #expect(MerkleTree.chunkCount(forSize: 65_536) == 1)
        #expect(MerkleTree.chunkCount(forSize: 65_537) == 2)
        #expect(MerkleTree.chunkCount(forSize: ProtocolLimits.maxAttachmentSize) == 1_600)
        #expect(ProtocolLimits.maxAttachmentChunks == 1_600)
        #expect(MerkleTree.chunkLength(index: 1, size: 65_537) == 1)
        #expect(MerkleTree.chunkLength(index: 0, size: 65_537) == 65_536)
        #expect(MerkleTree.chunkLength(index: 2, size: 65_537) == 0)
    }
}
