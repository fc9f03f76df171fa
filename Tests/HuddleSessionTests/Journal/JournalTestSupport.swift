import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// Shared fixtures of the journal tests.
enum JournalFixtures {
    /// The deterministic test content also used for the committed Merkle vectors: byte `i` is
    /// `(i * 31 + (i >> 16) * 7) & 0xff`.
    static func data(_ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 16) &* 7) }
    }

    static let signingKey = try! Ed25519PrivateKey(seedBytes: [UInt8](repeating: 1, count: 32))

    static func id(_ byte: UInt8) -> AttachmentID { AttachmentID(bytes: [UInt8](repeating: byte, count: 16))! }

    static func leaves(_ data: [UInt8]) -> (leaves: [UInt8], root: [UInt8]) {
        var hasher = MerkleLeafHasher()
        hasher.update(data)
        return hasher.finalize()
    }

    static func manifest(_ data: [UInt8], id: AttachmentID, metadata: [UInt8] = []) throws -> AttachmentManifest {
        try AttachmentManifest(
            id: id, size: UInt64(data.count), root: leaves(data).root, metadata: metadata, signingKey: signingKey)
    }

    /// Byte equality without printing megabytes on failure.
    static func identical(_ a: [UInt8], _ b: [UInt8]) -> Bool { a == b }

    static func hex(_ string: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = string.startIndex
        while index < string.endIndex {
            let next = string.index(index, offsetBy: 2)
            out.append(UInt8(string[index..<next], radix: 16)!)
            index = next
        }
        return out
    }
}
