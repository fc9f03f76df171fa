import HuddleProtocol
import HuddleSession

/// A ``JournalChunkStore`` in memory, for tests: it survives a simulated crash when the test keeps it, and can be
/// damaged (a flipped bit) or made to refuse writes (a full disk).
public struct InMemoryChunkStore: JournalChunkStore, Sendable {
    /// Chunks by attachment and index.
    public private(set) var chunks: [AttachmentID: [Int: [UInt8]]] = [:]
    /// Writes beyond this many chunks in total fail (a full disk); `nil`: unlimited.
    public var capacity: Int?
    /// Writes so far.
    public private(set) var writes = 0

    /// The error a write past ``capacity`` throws (as ``JournalStoreError/outOfSpace(_:)``).
    public struct Full: Error, CustomStringConvertible {
        /// The store's capacity in chunks.
        public let capacity: Int
        public var description: String { "the in-memory store holds \(capacity) chunks" }
    }

    /// An empty store.
    public init() {}

    public mutating func write(_ id: AttachmentID, index: Int, bytes: [UInt8]) throws {
        if let capacity, chunks.values.reduce(0, { $0 + $1.count }) >= capacity {
            throw JournalStoreError.outOfSpace(Full(capacity: capacity))
        }
        chunks[id, default: [:]][index] = bytes
        writes += 1
    }

    public func read(_ id: AttachmentID, index: Int) -> [UInt8]? { chunks[id]?[index] }

    public func storedIndices(_ id: AttachmentID) -> [Int] { (chunks[id]?.keys).map { $0.sorted() } ?? [] }

    public mutating func delete(_ id: AttachmentID) { chunks[id] = nil }

    /// Stores a whole attachment (what an author does before adding it).
    public mutating func put(_ id: AttachmentID, data: [UInt8]) {
        var index = 0
        var offset = 0
        while offset < data.count {
            let end = min(offset + MerkleTree.chunkSize, data.count)
            chunks[id, default: [:]][index] = Array(data[offset..<end])
            index += 1
            offset = end
        }
    }

    /// The stored bytes of `id`, concatenated in index order (to compare with the original).
    public func assemble(_ id: AttachmentID) -> [UInt8] {
        guard let stored = chunks[id] else { return [] }
        var out: [UInt8] = []
        for index in stored.keys.sorted() { out += stored[index]! }
        return out
    }

    /// Flips one bit of a stored chunk (disk damage).
    public mutating func flipBit(_ id: AttachmentID, index: Int) {
        chunks[id]?[index]?[0] ^= 0x01
    }
}
