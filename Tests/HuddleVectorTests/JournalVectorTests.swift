import HuddleCrypto
import Testing

@testable import HuddleProtocol
@testable import HuddleSession

/// `journal.json`: the journal of PROTOCOL.md section 9. Leaves, nodes and Merkle roots through `MerkleTree` and
/// `MerkleLeafHasher` (the streaming hasher attachments use), for 0 to 1,600 chunks of the section 9.1 test content;
/// inclusion proofs (informative: Swift sends whole leaf lists and has no proof API, so each audit path is checked
/// against Swift's node hash and root); manifests through `AttachmentManifest` (decoded, re-signed from the author's
/// seed in kdf.json and compared byte for byte, and each failing section 9.2 check); every journal message through
/// `JournalMessage`, decoded and encoded.
@Suite("Vectors: journal.json")
struct JournalVectorTests {
    static let file = "journal"
    static let leaves: CaseFilter = { $0.has("leaf") && !$0.has("path") }
    static let nodes: CaseFilter = { $0.has("node") }
    static let roots: CaseFilter = { $0.has("root") && $0.has("chunk_count") && !$0.has("manifest") }
    static let proofs: CaseFilter = { $0.has("path") }
    static let manifests: CaseFilter = { $0.has("manifest") && !$0.has("error") }
    static let badManifests: CaseFilter = { $0.has("manifest") && $0.has("error") }
    static let messages: CaseFilter = { $0.has("message") }
    static let ignored: CaseFilter = { $0.has("ignored") }

    @Test("Every case of journal.json is checked (75 cases)")
    func coverage() throws {
        try expectCoverage(
            of: Self.file, count: 75,
            groups: [
                ("leaf", Self.leaves), ("node", Self.nodes), ("root", Self.roots), ("proof", Self.proofs),
                ("manifest", Self.manifests), ("invalid manifest", Self.badManifests), ("message", Self.messages),
                ("ignored", Self.ignored),
            ])
    }

    @Test("Leaf hashes", arguments: VectorFile.names(file, where: leaves))
    func leaf(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let length = try vector.int("chunk_length")
        let chunk = vector.has("chunk") ? try vector.bytes("chunk") : testChunk(0, length: length)
        #expect(chunk.count == length)
        #expect(try hexString(MerkleTree.leafHash(chunk)) == vector.string("leaf"))
    }

    @Test("Node hashes", arguments: VectorFile.names(file, where: nodes))
    func node(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let hash = MerkleTree.nodeHash(try vector.bytes("left")[...], try vector.bytes("right")[...])
        #expect(try hexString(hash) == vector.string("node"))
        // With two leaves the root is that node.
        #expect(
            try hexString(MerkleTree.root(leaves: vector.bytes("left") + vector.bytes("right")))
                == vector.string("node"))
    }

    @Test("Merkle roots of the test content, through MerkleLeafHasher", arguments: VectorFile.names(file, where: roots))
    func root(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let size = try vector.uint64("size")
        var hasher = MerkleLeafHasher()
        for index in 0..<Int(MerkleTree.chunkCount(forSize: size)) {
            hasher.update(testChunk(index, length: MerkleTree.chunkLength(index: index, size: size)))
        }
        #expect(hasher.byteCount == size)
        let (leaves, root) = hasher.finalize()
        let count = leaves.count / MerkleTree.hashLength
        #expect(try UInt64(count) == vector.uint64("chunk_count"))
        #expect(MerkleTree.chunkCount(forSize: size) == UInt64(count))
        let lastLength = count == 0 ? 0 : MerkleTree.chunkLength(index: count - 1, size: size)
        #expect(try lastLength == vector.int("last_chunk_length"))
        if vector.has("leaves") {
            #expect(try splitHashes(leaves) == vector.array("leaves"))
        }
        if vector.has("leaf_list_blake2b") {
            #expect(try hexString(BLAKE2b.hash(leaves)) == vector.string("leaf_list_blake2b"))
        }
        #expect(try hexString(root) == vector.string("root"))
        #expect(hexString(MerkleTree.root(leaves: leaves)) == hexString(root))
        #expect(MerkleTree.verify(leaves: leaves, chunkCount: count, root: try vector.bytes("root")))
    }

    @Test(
        "Inclusion proofs (informative) against Swift's node hash and root",
        arguments: VectorFile.names(file, where: proofs))
    func inclusion(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let index = try vector.int("leaf_index")
        let size = try vector.int("tree_size")
        let root = try vector.bytes("root")
        // The tree: the root case with this many leaves and this root.
        let file = try VectorFile.load(Self.file)
        let tree = try #require(
            file.cases.first {
                (try? $0.int("chunk_count")) == size && (try? $0.bytes("root")) == root && $0.has("leaves")
            })
        let leaves = try tree.array("leaves").map { try $0.bytes() }
        #expect(MerkleTree.root(leaves: leaves.flatMap { $0 }) == root)
        try #require(index < leaves.count)
        #expect(try leaves[index] == vector.bytes("leaf"))
        let path = try vector.array("path").map { try $0.bytes() }
        #expect(verifyInclusion(leaf: leaves[index], index: index, size: size, path: path) == root)
    }

    @Test("A manifest: fields, bytes, signed message", arguments: VectorFile.names(file, where: manifests))
    func manifest(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        let fields = try vector.value("manifest")
        let decoded = try AttachmentManifest(decoding: encoded)
        #expect(manifestJSON(decoded) == fields)
        #expect(hexString(decoded.encoded()) == hexString(encoded))
        #expect(
            try hexString(AttachmentManifest.signingContext + encoded.dropLast(64)) == vector.string("signed_message"))
        // Signed anew from the author's seed (Ed25519 is deterministic): the same bytes.
        #expect(try hexString(signedManifest(fields).encoded()) == hexString(encoded))
    }

    @Test(
        "An invalid manifest fails the named section 9.2 check", arguments: VectorFile.names(file, where: badManifests))
    func invalidManifest(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let expected = try vector.string("error")
        do {
            let manifest = try AttachmentManifest(decoding: try vector.bytes("encoded"))
            Issue.record("\(name) decoded as \(manifest)")
        } catch {
            #expect(manifestCheck(error) == expected, "\(name): Swift threw \(error)")
        }
        // Inside ANNOUNCE, the same refusal.
        #expect(throws: JournalError.self) { try JournalMessage(decoding: [1] + (try vector.bytes("encoded"))) }
    }

    @Test("A journal message: fields, bytes and channel", arguments: VectorFile.names(file, where: messages))
    func message(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let fields = try vector.value("message")
        if name == "chunk_full_length" {
            // A full chunk: the vector gives the encoding's prefix, length and hash.
            let message = JournalMessage.chunk(
                try #require(AttachmentID(bytes: try fields.bytes("id"))), index: try fields.int("index"),
                bytes: testChunk(try fields.int("index"), length: try vector.int("data_length")))
            let encoded = message.encoded()
            #expect(try hexString(encoded.prefix(24)) == vector.string("encoded_prefix"))
            #expect(try encoded.count == vector.int("encoded_length"))
            #expect(try hexString(BLAKE2b.hash(encoded)) == vector.string("encoded_blake2b"))
            #expect(try JournalMessage(decoding: encoded) == message)
            #expect(try UInt64(message.channel.rawValue) == vector.uint64("channel"))
            return
        }
        let encoded = try vector.bytes("encoded")
        let decoded = try JournalMessage(decoding: encoded)
        #expect(journalJSON(decoded) == fields)
        #expect(try UInt64(decoded.channel.rawValue) == vector.uint64("channel"))
        #expect(try hexString(journalMessage(fields).encoded()) == hexString(encoded))
    }

    @Test(
        "An unknown journal message type is decoded as unknown and ignored",
        arguments: VectorFile.names(file, where: ignored))
    func unknown(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        #expect(try vector.value("ignored") == .bool(true))
        let decoded = try JournalMessage(decoding: encoded)
        #expect(decoded == .unknown(type: encoded[0]))
        #expect(try UInt64(decoded.channel.rawValue) == vector.uint64("channel"))
    }
}

// MARK: - Test content and Merkle helpers

/// Chunk `index` (`length` bytes) of section 9.1's test content, byte i = (i * 31 + (i >> 16) * 7) mod 256. Within
/// chunk k that is (j * 31 + k * 7) mod 256, so chunks repeat with period 256 (one table of 256 full chunks serves a
/// 100 MiB attachment).
func testChunk(_ index: Int, length: Int) -> [UInt8] {
    Array(TestContent.chunks[index % 256].prefix(length))
}

enum TestContent {
    static let chunks: [[UInt8]] = (0..<256).map { chunk in
        var bytes = [UInt8](repeating: 0, count: MerkleTree.chunkSize)
        var value = UInt8(truncatingIfNeeded: chunk &* 7)
        for index in 0..<bytes.count {
            bytes[index] = value
            value &+= 31
        }
        return bytes
    }
}

/// The 32-byte hashes of a leaf list, as hex.
func splitHashes(_ hashes: [UInt8]) -> [JSON] {
    stride(from: 0, to: hashes.count, by: MerkleTree.hashLength).map {
        .hex(hashes[$0..<($0 + MerkleTree.hashLength)])
    }
}

/// The root an RFC 9162 section 2.1.3.2 audit path leads to, hashing with Swift's `MerkleTree.nodeHash` (the
/// verification algorithm is this test's; Swift has none).
func verifyInclusion(leaf: [UInt8], index: Int, size: Int, path: [[UInt8]]) -> [UInt8]? {
    guard index < size else { return nil }
    var fn = index
    var sn = size - 1
    var hash = leaf
    for sibling in path {
        guard sn != 0 else { return nil }
        if fn & 1 == 1 || fn == sn {
            hash = MerkleTree.nodeHash(sibling[...], hash[...])
            if fn & 1 == 0 {
                repeat {
                    fn >>= 1
                    sn >>= 1
                } while fn & 1 == 0 && fn != 0
            }
        } else {
            hash = MerkleTree.nodeHash(hash[...], sibling[...])
        }
        fn >>= 1
        sn >>= 1
    }
    return sn == 0 ? hash : nil
}

// MARK: - Manifests and messages in the vector schema

/// A manifest in the vector schema.
func manifestJSON(_ manifest: AttachmentManifest) -> JSON {
    [
        "id": .hex(manifest.id.bytes), "size": .int(manifest.size), "chunk_size": .int(manifest.chunkSize),
        "chunk_count": .int(manifest.chunkCount), "root": .hex(manifest.root), "author": .hex(manifest.author.bytes),
        "metadata": .hex(manifest.metadata), "signature": .hex(manifest.signature),
    ]
}

/// The manifest a vector describes, signed by Swift with its author's signing seed (kdf.json's identities).
func signedManifest(_ fields: JSON) throws -> AttachmentManifest {
    let author = try fields.string("author")
    let kdf = try VectorFile.load("kdf")
    let identity = try #require(
        kdf.cases.first { (try? $0.string("signing_key")) == author && $0.has("signing_seed") },
        "no signing seed in kdf.json for \(author)")
    return try AttachmentManifest(
        id: try #require(AttachmentID(bytes: try fields.bytes("id"))), size: try fields.uint64("size"),
        root: try fields.bytes("root"), metadata: try fields.bytes("metadata"),
        signingKey: try Ed25519PrivateKey(seedBytes: try identity.bytes("signing_seed")))
}

/// The section 9.2 check a manifest error reports, in the vector files' names. Swift has distinct cases only for the
/// size, metadata length and signature checks; chunk size, chunk count and the empty root are each a `.malformed`
/// whose text names the check.
func manifestCheck(_ error: any Error) -> String? {
    switch error as? JournalError {
    case .attachmentTooLarge: "size"
    case .malformed(let text) where text.hasPrefix("chunk size"): "chunk_size"
    case .malformed(let text) where text.hasPrefix("chunk count"): "chunk_count"
    case .malformed(let text) where text.contains("empty root"): "root"
    case .limitExceeded(let what, _) where what == "attachment metadata": "metadata_length"
    case .badManifest: "signature"
    default: nil
    }
}

/// A decoded journal message in the vector schema.
func journalJSON(_ message: JournalMessage) -> JSON {
    switch message {
    case .announce(let manifest):
        return ["type": "announce", "manifest": manifestJSON(manifest)]
    case .have(let id, let ranges):
        return [
            "type": "have", "id": .hex(id.bytes),
            "ranges": .array(ranges.map { ["start": .int($0.lowerBound), "length": .int($0.count)] }),
        ]
    case .leavesRequest(let id, let first, let count):
        return ["type": "leaves_request", "id": .hex(id.bytes), "first": .int(first), "count": .int(count)]
    case .leaves(let id, let first, let hashes):
        return [
            "type": "leaves", "id": .hex(id.bytes), "first": .int(first),
            "count": .int(hashes.count / MerkleTree.hashLength), "leaves": .array(splitHashes(hashes)),
        ]
    case .chunkRequest(let id, let index):
        return ["type": "chunk_request", "id": .hex(id.bytes), "index": .int(index)]
    case .chunk(let id, let index, let bytes):
        return ["type": "chunk", "id": .hex(id.bytes), "index": .int(index), "data": .hex(bytes)]
    case .chunkMissing(let id, let index):
        return ["type": "chunk_missing", "id": .hex(id.bytes), "index": .int(index)]
    case .remove(let id):
        return ["type": "remove", "id": .hex(id.bytes)]
    case .unknown(let type):
        return ["type": .string("unknown \(type)")]
    }
}

/// The ``JournalMessage`` a vector describes.
func journalMessage(_ json: JSON) throws -> JournalMessage {
    func id() throws -> AttachmentID { try #require(AttachmentID(bytes: try json.bytes("id"))) }
    switch try json.string("type") {
    case "announce":
        return .announce(try AttachmentManifest(decoding: try manifestBytes(try json.value("manifest"))))
    case "have":
        return .have(
            try id(),
            ranges: try json.array("ranges").map { try $0.int("start")..<($0.int("start") + $0.int("length")) })
    case "leaves_request":
        return .leavesRequest(try id(), first: try json.int("first"), count: try json.int("count"))
    case "leaves":
        let hashes = try json.array("leaves").flatMap { try $0.bytes() }
        #expect(try hashes.count == json.int("count") * MerkleTree.hashLength)
        return .leaves(try id(), first: try json.int("first"), hashes: hashes)
    case "chunk_request":
        return .chunkRequest(try id(), index: try json.int("index"))
    case "chunk":
        return .chunk(try id(), index: try json.int("index"), bytes: try json.bytes("data"))
    case "chunk_missing":
        return .chunkMissing(try id(), index: try json.int("index"))
    case "remove":
        return .remove(try id())
    case let other:
        throw VectorError.wrongType(other, expected: "journal message type", in: json)
    }
}

/// A manifest's bytes from its vector fields, written in section 9.2's layout by `AttachmentManifest` (signed anew
/// from the author's seed; the result must carry the vector's signature).
func manifestBytes(_ fields: JSON) throws -> [UInt8] {
    let manifest = try signedManifest(fields)
    #expect(try hexString(manifest.signature) == fields.string("signature"))
    return manifest.encoded()
}
