import HuddleProtocol

/// Why a ``JournalChunkStore`` could not store a chunk. A store throws it from ``JournalChunkStore/write(_:index:bytes:)``
/// so that the application learns whether freeing space would help; any other error a store throws is reported as
/// ``failed(_:)``. Each case keeps the store's own error, which the driver that owns the store can hand on typed.
public enum JournalStoreError: Error, Hashable, CustomStringConvertible {
    /// The disk (or the store's quota) is full. Verified chunks are kept; the download can resume once space is freed.
    case outOfSpace(any Error)
    /// Another storage failure.
    case failed(any Error)

    /// The store's own error.
    public var underlying: any Error {
        switch self {
        case .outOfSpace(let error), .failed(let error): error
        }
    }

    public var description: String { "\(underlying)" }

    // Two reports are the same when they say the same thing: the store's errors need not be equatable.
    public static func == (lhs: JournalStoreError, rhs: JournalStoreError) -> Bool {
        switch (lhs, rhs) {
        case (.outOfSpace, .outOfSpace), (.failed, .failed): lhs.description == rhs.description
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        if case .outOfSpace = self { hasher.combine(0) } else { hasher.combine(1) }
        hasher.combine(description)
    }
}
