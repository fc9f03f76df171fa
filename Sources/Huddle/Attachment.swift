import Foundation
import HuddleProtocol
import HuddleSession
import NIOPosix

extension Journal {
    /// A file or blob in a session's ``Journal``, as Apple's `GroupSessionJournal.Attachment`: up to 100 MiB, signed by its author, verified chunk by chunk against
    /// its Merkle root, and held by every member, so it reaches late joiners without the author sending it again and
    /// outlives the author's departure until every member has left.
    ///
    /// Equal attachments have the same ``id``. The bytes are available once every chunk is verified: ``load()`` and
    /// ``save(to:)`` wait for that, ``progress`` shows how far it is.
    public struct Attachment: Identifiable, Hashable, Sendable, CustomStringConvertible {
        /// The attachment's identifier, the same on every member.
        public let id: UUID
        /// The size in bytes.
        public let size: Int
        /// The author's identity fingerprint (the ``Participant/id`` it had).
        public let authorID: String
        /// The author, if this node has seen it as a participant (`nil` when it left before this node joined).
        public let author: Participant?
        /// The application's metadata as the author encoded it (JSON for ``Journal/add(_:metadata:)``).
        public let metadata: Data
        let handle: AttachmentHandle

        init(manifest: AttachmentManifest, author: Participant?, handle: AttachmentHandle) {
            id = UUID(attachmentID: manifest.id)
            size = Int(manifest.size)
            authorID = manifest.author.fingerprint
            self.author = author
            metadata = Data(manifest.metadata)
            self.handle = handle
        }

        public static func == (lhs: Attachment, rhs: Attachment) -> Bool { lhs.id == rhs.id }
        public func hash(into hasher: inout Hasher) { hasher.combine(id) }

        public var description: String { "attachment \(id) (\(size) bytes)" }

        /// Decodes the metadata the author attached (JSON).
        ///
        /// - Throws: ``HuddleError/coding(_:)`` when it is not a `Metadata`.
        public func loadMetadata<Metadata: Decodable>(of type: Metadata.Type) throws(HuddleError) -> Metadata {
            do {
                return try JSONDecoder().decode(Metadata.self, from: metadata)
            } catch {
                throw .coding(CodingFailure(.decoding, Metadata.self, error))
            }
        }

        /// How far this node's copy is, now.
        public var progress: AttachmentProgress { handle.progress.value }

        /// This node's progress: the current value first, then every change, ending with a final status.
        public var progressUpdates: AsyncStream<AttachmentProgress> { handle.progress.stream() }

        /// The attachment's bytes, once every chunk is verified (it waits until then).
        ///
        /// - Throws: ``HuddleError/attachmentRemoved`` (removed, or the session ended first), ``HuddleError/storage(_:)``
        ///   when this node could not store it (``StorageError/diskFull(path:)`` for a full disk).
        public func load() async throws(HuddleError) -> Data {
            try await handle.waitUntilComplete()
            let handle = self.handle
            let bytes = try await Self.runBlocking { () throws(StorageError) in
                try handle.store.readData(handle.id, size: handle.size)
            }
            return Data(bytes)
        }

        /// Writes the attachment's bytes to `url` once every chunk is verified (it waits until then), streaming from
        /// the store through a temporary file next to `url` that replaces it at the end, so `url` never holds a
        /// partial copy and memory use does not grow with the size.
        ///
        /// - Throws: as ``load()``, and ``HuddleError/storage(_:)`` for the destination.
        public func save(to url: URL) async throws(HuddleError) {
            try await handle.waitUntilComplete()
            let handle = self.handle
            try await Self.runBlocking { () throws(StorageError) in
                try handle.store.copyData(handle.id, size: handle.size, to: url)
            }
        }

        /// The BLAKE2b-512 digest of the bytes in lowercase hex, as `b2sum` prints it, once every chunk is verified (it
        /// waits until then). Computed by streaming from the store, never the whole attachment in memory.
        ///
        /// - Throws: as ``load()``.
        public func digest() async throws(HuddleError) -> String {
            try await handle.waitUntilComplete()
            let handle = self.handle
            let digest = try await Self.runBlocking { () throws(StorageError) in
                try handle.store.digest(handle.id, size: handle.size)
            }
            return digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }

        /// Runs file I/O on NIO's blocking-I/O thread pool, mapping store errors to ``HuddleError``.
        static func runBlocking<Result: Sendable>(
            _ body: @escaping @Sendable () throws(StorageError) -> Result
        ) async throws(HuddleError) -> Result {
            do {
                return try await NIOThreadPool.singleton.runIfActive { try body() }
            } catch let error as StorageError {
                throw HuddleError(error)
            } catch {
                // The shared pool refuses work only once it is shut down, which happens only as the process exits.
                throw .transport(.driverClosed)
            }
        }
    }
}

extension UUID {
    /// The UUID with an attachment identifier's 16 bytes.
    init(attachmentID: AttachmentID) {
        let b = attachmentID.bytes
        self.init(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// The attachment identifier with this UUID's 16 bytes.
    var attachmentID: AttachmentID {
        withUnsafeBytes(of: uuid) { AttachmentID(bytes: $0)! }
    }
}
