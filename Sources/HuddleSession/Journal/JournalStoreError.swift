import HuddleProtocol

/// Why a ``JournalChunkStore`` could not store a chunk. A store throws it from ``JournalChunkStore/write(_:index:bytes:)``
/// so that the application learns whether freeing space would help; any other error a store throws is reported as
/// ``failed(_:)``.
public enum JournalStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The disk (or the store's quota) is full. Verified chunks are kept; the download can resume once space is freed.
    case outOfSpace(String)
    /// Another storage failure, described for a person.
    case failed(String)

    public var description: String {
        switch self {
        case .outOfSpace(let detail): detail
        case .failed(let detail): detail
        }
    }
}
