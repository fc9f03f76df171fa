import HuddleProtocol

/// Where a node keeps attachment chunks: the caller's, in memory for tests or on disk in production. The journal
/// core never holds a whole attachment; it asks for one chunk at a time through ``JournalAction``s, and
/// ``JournalCore`` applies them to a store of this shape.
public protocol JournalChunkStore {
    /// Stores a verified chunk (overwriting any previous copy). Throws when the store cannot: preferably a
    /// ``JournalStoreError`` (``JournalStoreError/outOfSpace(_:)`` for a full disk), so the application can tell.
    mutating func write(_ id: AttachmentID, index: Int, bytes: [UInt8]) throws
    /// Chunk `index` of `id`, or `nil` if it is not stored.
    func read(_ id: AttachmentID, index: Int) -> [UInt8]?
    /// The indices of the chunks stored for `id`, unverified (the core verifies each one when it is scanned).
    func storedIndices(_ id: AttachmentID) -> [Int]
    /// Deletes everything stored for `id`.
    mutating func delete(_ id: AttachmentID)
}

extension JournalChunkStore {
    /// Applies one deferred action (``JournalCore/pollStoreAction()``) to this store, verifying what reads and scans
    /// find with `verifier` (the attachment's ``ChunkVerifier``, taken when the action was polled), and returns what
    /// to report back with ``JournalCore/complete(_:endpoint:now:)``. A driver calls this wherever its store lives
    /// (a thread pool for files, the simulator's clock for a slow in-memory disk). `nil` for a send, which the core
    /// never defers.
    public mutating func apply(_ action: JournalAction, verifier: ChunkVerifier?) -> JournalStoreCompletion? {
        switch action {
        case .writeChunk(let id, let index, let bytes):
            do {
                try write(id, index: index, bytes: bytes)
                return .written(id, index: index, failure: nil)
            } catch let error as JournalStoreError {
                return .written(id, index: index, failure: error)
            } catch {
                return .written(id, index: index, failure: .failed(error))
            }
        case .readChunk(let id, let index, let peer):
            let bytes = read(id, index: index).flatMap { bytes in
                verifier?.verify(bytes, index: index) == true ? bytes : nil
            }
            return .read(id, index: index, bytes: bytes, for: peer)
        case .scanStore(let id):
            // One chunk at a time: the scan never holds more than a chunk in memory.
            var verified: [Int] = []
            if let verifier {
                for index in storedIndices(id) {
                    if let bytes = read(id, index: index), verifier.verify(bytes, index: index) {
                        verified.append(index)
                    }
                }
            }
            return .scanned(id, verified: verified)
        case .deleteAttachment(let id):
            delete(id)
            return .deleted(id)
        case .event(let event):
            return .event(event)
        case .send:
            return nil
        }
    }
}
