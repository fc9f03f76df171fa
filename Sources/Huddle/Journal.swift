import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// Attachments shared with a session, like Apple's `GroupSessionJournal`: files or blobs up to 100 MiB that every
/// member receives, including members who join later, without the author sending them again.
///
/// ```swift
/// let journal = Journal(session: session)
/// let attachment = try await journal.add(contentsOf: photoURL, metadata: PhotoInfo(caption: "sunset"))
/// for await attachments in journal.attachments {          // on every member
///     for attachment in attachments { try await attachment.save(to: folder.appending(path: "\(attachment.id)")) }
/// }
/// ```
///
/// How it works: the author stores the bytes in its node's data directory, cuts them into 64 KiB chunks, and signs
/// a manifest (size, Merkle root, metadata). Every member fetches the chunks from every member that holds them,
/// verifies each against the root before storing it, and serves what it holds to the others. An attachment lives
/// while any member holding it remains; removing it (any member may) deletes it everywhere. Chunks travel on a bulk
/// channel below messages, so messages stay responsive during a transfer.
///
/// Several `Journal` handles may share a session; they see the same attachments. The node takes part in the
/// journal whether or not the application creates a handle, so it can serve what it holds to late joiners.
public final class Journal: Sendable {
    /// The largest attachment: 100 MiB (104,857,600 bytes).
    public static let maxAttachmentSize = Int(ProtocolLimits.maxAttachmentSize)
    /// The largest encoded metadata: 16 KiB.
    public static let maxMetadataSize = ProtocolLimits.maxAttachmentMetadataBytes
    /// The most attachments a journal holds at once: 1,024.
    public static let maxAttachments = ProtocolLimits.maxJournalAttachments

    /// Which of an author's bounds ``HuddleError/authorShareFull(_:limit:)`` met.
    public enum AuthorBound: Sendable, Hashable, CustomStringConvertible {
        /// The number of attachments one author may have in the journal (128).
        case attachments
        /// The bytes of one author's attachments together (1 GiB).
        case bytes

        public var description: String {
            switch self {
            case .attachments: "attachments"
            case .bytes: "bytes of attachments"
            }
        }
    }

    let engine: SessionEngine
    let context: SessionContext

    /// The journal of `session`.
    public init(session: GroupSession<some GroupActivity>) {
        engine = session.engine
        context = session.context
    }

    /// The attachments now, in the order they were added.
    public var attachments: [Attachment] { context.journal.list.value }

    /// The current attachments first, then the whole list again after every addition or removal (by anyone), in
    /// the order they were added. Ends when the session is over.
    public var attachmentUpdates: AsyncStream<[Attachment]> { context.journal.list.stream() }

    /// Adds `data` with Codable `metadata` (stored as JSON). Returns once the bytes are stored and announced, before
    /// the other members have them; follow their arrival with ``Journal/Attachment/progressUpdates`` on their side.
    ///
    /// - Throws: ``HuddleError/attachmentTooLarge(size:limit:)`` over 100 MiB (nothing is stored or sent),
    ///   ``HuddleError/attachmentMetadataTooLarge(size:limit:)``, ``HuddleError/notJoined``,
    ///   ``HuddleError/invalidated(_:)`` (this session is over),
    ///   ``HuddleError/journalFull(limit:)``, ``HuddleError/authorShareFull(_:limit:)``, ``HuddleError/storage(_:)``,
    ///   ``HuddleError/coding(_:)``.
    public func add(_ data: Data, metadata: some Encodable & Sendable) async throws(HuddleError) -> Attachment {
        try await add(data, encodedMetadata: Self.encode(metadata))
    }

    /// Adds `data` without metadata.
    public func add(_ data: Data) async throws(HuddleError) -> Attachment {
        try await add(data, encodedMetadata: [])
    }

    /// Adds the contents of the file at `fileURL` with Codable `metadata`, streaming it into the node's store (the
    /// file is read once, in pieces, never whole into memory). Later changes to the file do not affect the
    /// attachment.
    ///
    /// - Throws: as ``add(_:metadata:)``, and ``HuddleError/storage(_:)`` when the file cannot be read.
    public func add(
        contentsOf fileURL: URL, metadata: some Encodable & Sendable
    ) async throws(HuddleError) -> Attachment {
        try await add(contentsOf: fileURL, encodedMetadata: Self.encode(metadata))
    }

    /// Adds the contents of the file at `fileURL` without metadata.
    public func add(contentsOf fileURL: URL) async throws(HuddleError) -> Attachment {
        try await add(contentsOf: fileURL, encodedMetadata: [])
    }

    /// Removes `attachment` for every member: each one deletes its copy, and downloads of it stop.
    ///
    /// - Throws: ``HuddleError/attachmentRemoved`` if it is no longer in the journal, ``HuddleError/notJoined``,
    ///   ``HuddleError/invalidated(_:)``.
    public func remove(_ attachment: Attachment) async throws(HuddleError) {
        let id = attachment.id.attachmentID
        let refusal = try await engine.perform(in: context) { machine, endpoint, now in
            machine.updateJournal(&endpoint, now: now) { journal -> JournalError? in
                do throws(JournalError) {
                    try journal.remove(id, now: now)
                    return nil
                } catch {
                    return error
                }
            }
        }
        if let refusal { throw HuddleError(refusal) }
    }

    /// How many members hold every byte of `attachment`, this node included, as far as this node knows (holders
    /// advertise what they verified every 250 ms or 8 chunks).
    ///
    /// - Throws: ``HuddleError/notJoined``, ``HuddleError/invalidated(_:)``.
    public func holders(of attachment: Attachment) async throws(HuddleError) -> Int {
        let id = attachment.id.attachmentID
        return try await engine.perform(in: context) { machine, _, _ in machine.journal.state.completeHolders(id) }
    }

    private func add(_ data: Data, encodedMetadata: [UInt8]) async throws(HuddleError) -> Attachment {
        guard data.count <= Self.maxAttachmentSize else {
            throw .attachmentTooLarge(size: data.count, limit: Self.maxAttachmentSize)
        }
        return try await add(metadata: encodedMetadata) { store, id throws(StorageError) in
            // `withUnsafeBytes` rethrows untyped; the result carries the store's typed error out.
            try data.withUnsafeBytes { bytes in Result { () throws(StorageError) in try store.importBytes(id, bytes) } }
                .get()
        }
    }

    private func add(contentsOf fileURL: URL, encodedMetadata: [UInt8]) async throws(HuddleError) -> Attachment {
        try await add(metadata: encodedMetadata) { store, id throws(StorageError) in
            try store.importFile(id, from: fileURL, limit: ProtocolLimits.maxAttachmentSize)
        }
    }

    /// Stores a new attachment with `importing` (on the blocking-I/O pool), signs its manifest and adds it to the
    /// journal, which announces it to every member. What was stored is deleted again when the journal refuses it.
    private func add(
        metadata: [UInt8],
        importing:
            @escaping @Sendable (FileChunkStore, AttachmentID) throws(StorageError) -> (
                leaves: [UInt8], root: [UInt8], size: UInt64
            )
    ) async throws(HuddleError) -> Attachment {
        try context.requireJoined()
        guard let store = context.journal.store else { throw .notJoined }
        var random = SystemRandomGenerator()
        let id = AttachmentID(bytes: random.bytes(count: AttachmentID.length))!
        let imported = try await Journal.Attachment.runBlocking { () throws(StorageError) in
            try importing(store, id)
        }
        do throws(HuddleError) {
            let manifest: AttachmentManifest
            do throws(JournalError) {
                manifest = try AttachmentManifest(
                    id: id, size: imported.size, root: imported.root, metadata: metadata,
                    signingKey: engine.identity.signingKey)
            } catch {
                throw HuddleError(error)
            }
            let refusal = try await engine.perform(in: context) { machine, endpoint, now in
                machine.updateJournal(&endpoint, now: now) { journal -> JournalError? in
                    do throws(JournalError) {
                        try journal.add(manifest, leaves: imported.leaves, now: now)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            if let refusal { throw HuddleError(refusal) }
        } catch {
            _ = try? await Journal.Attachment.runBlocking { store.delete(id) }
            throw error
        }
        guard let attachment = context.journal.attachment(id) else { throw .attachmentRemoved }
        return attachment
    }

    private static func encode(_ metadata: some Encodable) throws(HuddleError) -> [UInt8] {
        let bytes: Data
        do {
            bytes = try JSONEncoder().encode(metadata)
        } catch {
            throw .coding(CodingFailure(.encoding, type(of: metadata), error))
        }
        guard bytes.count <= maxMetadataSize else {
            throw .attachmentMetadataTooLarge(size: bytes.count, limit: maxMetadataSize)
        }
        return Array(bytes)
    }
}
