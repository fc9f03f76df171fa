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
