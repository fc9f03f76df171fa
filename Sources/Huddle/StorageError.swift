#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why the node's attachment store, or a file given to it, could not be used: the payload of
/// ``HuddleError/storage(_:)``. Each description is a sentence for the person at the screen: it names the file involved
/// and, where the system gave a reason, the system's wording of it.
public enum StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file system has no space (or the user's quota is used up) for `path`. Chunks already stored are kept.
    case diskFull(path: String)
    /// A file given to share has `size` bytes, more than `limit`. When the file grew while it was read, `size` is how
    /// much had been read when the limit was passed.
    case tooLarge(size: UInt64, limit: UInt64)
    /// The file given to share at `path` cannot be opened or read (`errno` is `EISDIR` for a directory).
    case unreadable(path: String, errno: Int32)
    /// The file given to share at `path` is not a regular file: a device (`/dev/zero`), a FIFO or a socket; `kind`
    /// names which. It could not be shared, as it has no fixed size (or reading it never ends).
    case notRegularFile(path: String, kind: String)
    /// A system call on the store's own files (or a copy's destination) failed; `operation` is a verb phrase that
    /// reads naturally before `path` ("write", "create the directory").
    case io(operation: String, path: String, errno: Int32)

    public var description: String {
        switch self {
        case .diskFull(let path):
            "the disk is full writing \(path); free some space and try again (what was already stored is kept)"
        case .tooLarge(let size, let limit):
            "the file is too large to share: it is \(ByteCountText.describe(Int(clamping: size))) and the limit is "
                + ByteCountText.describe(Int(clamping: limit))
        case .unreadable(let path, let code):
            "cannot read \(path): \(Self.reason(code))"
        case .notRegularFile(let path, let kind):
            "cannot share \(path): not a regular file (\(kind)); share a regular file"
        case .io(let operation, let path, let code):
            "cannot \(operation) \(path): \(Self.reason(code))"
        }
    }

    /// What a file of type `type` (`st_mode & S_IFMT`) is, for ``notRegularFile(path:kind:)``.
    static func kind(ofFileType type: mode_t) -> String {
        switch type {
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }

    /// The system's wording of `code` ("No such file or directory").
    static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// The earlier name of ``StorageError``.
@available(*, deprecated, renamed: "StorageError")
public typealias FileChunkStoreError = StorageError
