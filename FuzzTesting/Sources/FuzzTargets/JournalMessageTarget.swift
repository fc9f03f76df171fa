import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// Journal messages (docs/PROTOCOL.md 9.3): anything that decodes re-encodes to an equal message.
public enum JournalMessageTarget: FuzzTarget {
    public static let name = "journal"

    public static func run(_ input: UnsafeRawBufferPointer) {
        guard let message = try? JournalMessage(decoding: Array(input)) else { return }
        guard let again = try? JournalMessage(decoding: message.encoded()) else {
            preconditionFailure("a decoded journal message does not decode after re-encoding")
        }
        precondition(again == message, "a journal message does not round-trip")
    }

    static func manifest() throws -> AttachmentManifest {
        var random = ChaChaRandomGenerator(seed: 2)
        let identity = Identity(using: &random)
        return try AttachmentManifest(
            id: AttachmentID(bytes: [UInt8](repeating: 7, count: 16))!, size: 70_000,
            root: [UInt8](repeating: 9, count: 32), metadata: Array("{\"name\":\"a.bin\"}".utf8),
            signingKey: identity.signingKey)
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let id = AttachmentID(bytes: [UInt8](repeating: 7, count: 16))!
        let messages: [(String, JournalMessage)] = [
            ("announce", .announce(try manifest())),
            ("have", .have(id, ranges: [0..<3, 5..<6])),
            ("leaves-request", .leavesRequest(id, first: 0, count: 2)),
            ("leaves", .leaves(id, first: 0, hashes: [UInt8](repeating: 1, count: 64))),
            ("chunk-request", .chunkRequest(id, index: 1)),
            ("chunk", .chunk(id, index: 1, bytes: [UInt8](repeating: 3, count: 100))),
            ("chunk-missing", .chunkMissing(id, index: 1)),
            ("remove", .remove(id)),
        ]
        return messages.map { ($0.0, $0.1.encoded()) }
    }
}

/// Attachment manifests (docs/PROTOCOL.md 9.2) on their own: decoding checks every limit; what decodes
/// re-encodes byte for byte.
public enum ManifestTarget: FuzzTarget {
    public static let name = "manifest"

    public static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        guard let manifest = try? AttachmentManifest(decoding: bytes) else { return }
        precondition(manifest.encoded() == bytes, "a manifest does not re-encode to its bytes")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        [("manifest", try JournalMessageTarget.manifest().encoded())]
    }
}
