import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire
import Testing

@Suite("Attachment manifests")
struct AttachmentManifestTests {
    static func patch(_ bytes: [UInt8], at offset: Int, _ value: UInt64, width: Int) -> [UInt8] {
        var out = bytes
        for index in 0..<width { out[offset + index] = UInt8(truncatingIfNeeded: value >> UInt64(8 * index)) }
        return out
    }

    @Test("Encode, decode, signature: round trip; the author's key is the signer's")
    func roundTrip() throws {
        let manifest = try JournalFixtures.manifest(
            JournalFixtures.data(70_000), id: JournalFixtures.id(1), metadata: Array("photo.png".utf8))
        let bytes = manifest.encoded()
        #expect(bytes.count == AttachmentManifest.fixedLength + 9)
        let decoded = try AttachmentManifest(decoding: bytes)
        #expect(decoded == manifest)
        #expect(decoded.chunkCount == 2)
        #expect(decoded.author == JournalFixtures.signingKey.publicKey)
    }

    @Test("F7: any changed byte breaks the signature (or a structural check)")
    func tampering() throws {
        let manifest = try JournalFixtures.manifest(JournalFixtures.data(70_000), id: JournalFixtures.id(1))
        let bytes = manifest.encoded()
        for offset in [0, 15, 40, 80, bytes.count - 1] {
            var tampered = bytes
            tampered[offset] ^= 0x01
            #expect(throws: JournalError.self) { try AttachmentManifest(decoding: tampered) }
        }
        var signatureFlip = bytes
        signatureFlip[bytes.count - 10] ^= 0x01
        #expect(throws: JournalError.badManifest) { try AttachmentManifest(decoding: signatureFlip) }
    }

    @Test("T1/F8: 100 MiB is accepted; 100 MiB + 1 is refused at signing and when decoding, before the signature")
    func sizeLimit() throws {
        let root = [UInt8](repeating: 9, count: 32)
        let atLimit = try AttachmentManifest(
            id: JournalFixtures.id(2), size: ProtocolLimits.maxAttachmentSize, root: root, metadata: [],
            signingKey: JournalFixtures.signingKey)
        #expect(atLimit.chunkCount == 1_600)
        #expect(try AttachmentManifest(decoding: atLimit.encoded()) == atLimit)
        #expect(throws: JournalError.attachmentTooLarge(size: 104_857_601, limit: 104_857_600)) {
            try AttachmentManifest(
                id: JournalFixtures.id(2), size: ProtocolLimits.maxAttachmentSize + 1, root: root, metadata: [],
                signingKey: JournalFixtures.signingKey)
        }
        // A hostile manifest claiming 100 MiB + 1 (chunk count consistent) and 2^64 - 1: refused on the size alone.
        var oversized = Self.patch(atLimit.encoded(), at: 16, ProtocolLimits.maxAttachmentSize + 1, width: 8)
        oversized = Self.patch(oversized, at: 28, 1_601, width: 4)
        #expect(throws: JournalError.attachmentTooLarge(size: 104_857_601, limit: 104_857_600)) {
            try AttachmentManifest(decoding: oversized)
        }
        let huge = Self.patch(atLimit.encoded(), at: 16, .max, width: 8)
        #expect(throws: JournalError.attachmentTooLarge(size: .max, limit: 104_857_600)) {
            try AttachmentManifest(decoding: huge)
        }
    }

    @Test("F8: wrong chunk size or chunk count is refused")
    func chunkFields() throws {
        let bytes = try JournalFixtures.manifest(JournalFixtures.data(70_000), id: JournalFixtures.id(3)).encoded()
        for chunkSize: UInt64 in [0, 65_535, 65_537, 1 << 20] {
            #expect(throws: JournalError.self) {
                try AttachmentManifest(decoding: Self.patch(bytes, at: 24, chunkSize, width: 4))
            }
        }
        for count: UInt64 in [0, 1, 3, 1_600] {
            #expect(throws: JournalError.malformed("chunk count \(count) does not match size 70000")) {
                try AttachmentManifest(decoding: Self.patch(bytes, at: 28, count, width: 4))
            }
        }
    }

    @Test("Metadata: 16 KiB accepted, 16 KiB + 1 refused (signing and decoding); empty attachment has the empty root")
    func metadataLimit() throws {
        let limit = ProtocolLimits.maxAttachmentMetadataBytes
        let full = try JournalFixtures.manifest(
            [], id: JournalFixtures.id(4), metadata: [UInt8](repeating: 7, count: limit))
        #expect(try AttachmentManifest(decoding: full.encoded()) == full)
        #expect(throws: JournalError.limitExceeded(what: "attachment metadata", limit: limit)) {
            try JournalFixtures.manifest(
                [], id: JournalFixtures.id(4), metadata: [UInt8](repeating: 7, count: limit + 1))
        }
        // A claimed metadata length of 4 GiB is refused before reading (the metadata length field is at 96).
        let claimed = Self.patch(full.encoded(), at: 96, UInt64(UInt32.max), width: 4)
        #expect(throws: JournalError.limitExceeded(what: "attachment metadata", limit: limit)) {
            try AttachmentManifest(decoding: claimed)
        }
        #expect(full.root == MerkleTree.emptyRoot)
        #expect(throws: JournalError.self) {
            try AttachmentManifest(
                id: JournalFixtures.id(5), size: 0, root: [UInt8](repeating: 0, count: 32), metadata: [],
                signingKey: JournalFixtures.signingKey)
        }
    }
}
