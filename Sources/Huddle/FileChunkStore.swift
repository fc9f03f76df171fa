import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import SystemPackage

/// A ``JournalChunkStore`` on disk: one directory (mode 0700) holding two files (mode 0600) per attachment, named by
/// the attachment's 32 lowercase hex digits:
///
/// - `<hex>.data`: the attachment's bytes, chunk `i` at offset `i * MerkleTree.chunkSize`. Chunks land wherever
///   they belong as they arrive, in any order, so a complete attachment's data file is the attachment itself, byte
///   for byte, and can be copied out or loaded without reassembly.
/// - `<hex>.index`: the chunk indices written so far, appended as little-endian `UInt32` records. An index is
///   appended only after its chunk's bytes are written, so a listed chunk at worst holds torn bytes. A partial
///   record left by a crash is ignored when reading and cut off before the next append.
///
/// Nothing is synced and nothing needs to be: ``JournalCore`` re-verifies every stored chunk against its leaf hash
/// when it scans the store, so a chunk torn or damaged by a crash is simply fetched again. Files are opened per call,
/// which keeps the store a plain value (`Sendable`, no descriptors to leak) at the cost of one `open` per chunk.
///
/// Files are read and written through swift-system's `FileDescriptor`, which retries calls a signal interrupted;
/// what it does not offer (`mkdir`, `rename`, `unlink`, `fsync`) is called directly.
struct FileChunkStore: JournalChunkStore, Sendable {
    /// How much an import, copy or index scan moves per system call: large enough that system calls cost nothing
    /// next to the hashing, small enough that a 100 MiB attachment never sits in memory whole.
    static let pieceSize = 1 << 20
    /// The length of one index record: a little-endian `UInt32` chunk index.
    static let recordSize = 4
    /// The largest attachment the index format can describe: `2^32` chunks.
    static let maxAttachmentSize = (UInt64(UInt32.max) + 1) * UInt64(MerkleTree.chunkSize)

    /// The directory holding every attachment's files.
    let directory: URL
    /// `directory` as a path for the system calls.
    private let directoryPath: String

    /// A store over `directory`, creating it and its missing parents with mode 0700 (attachments are private to the
    /// session's members). Files already in the directory are kept, so a restarted node resumes its downloads.
    init(directory: URL) throws(StorageError) {
        self.directory = directory
        self.directoryPath = directory.path
        try Self.createDirectory(directoryPath)
    }

    // MARK: - JournalChunkStore

    /// Stores chunk `index` of `id` at its place in the data file, then appends `index` to the index file. A chunk
    /// written twice is recorded twice; ``storedIndices(_:)`` reports it once. Throws
    /// ``StorageError/diskFull(path:)`` when the file system or quota is full, so the failure can be shown as
    /// something a person can fix.
    func writeChunk(_ id: AttachmentID, index: Int, bytes: [UInt8]) throws(StorageError) {
        let paths = self.paths(id)
        // A longer chunk would overwrite the next one; an index beyond UInt32 cannot be recorded.
        guard index >= 0, index <= Int(UInt32.max), bytes.count <= MerkleTree.chunkSize else {
            throw .io(
                operation: "write chunk \(index) (\(bytes.count) bytes) to", path: paths.data,
                errno: Errno.invalidArgument.rawValue)
        }
        try Self.withWritableFile(paths.data, options: []) { file throws(StorageError) in
            try Self.call(Self.writeFailure("write", paths.data)) {
                try file.writeAll(toAbsoluteOffset: Int64(index) * Int64(MerkleTree.chunkSize), bytes)
            }
        }
        let record = Self.records(UInt32(index)..<(UInt32(index) + 1))
        try Self.withWritableFile(paths.index, options: .append) { file throws(StorageError) in
            // A crash mid-append can leave a partial record; appending after it would misalign every later record,
            // so it is cut off first (its chunk is simply not listed, and fetched again).
            try Self.call(Self.writeFailure("write", paths.index)) {
                let size = try file.stat().size
                let torn = size % Int64(Self.recordSize)
                if torn != 0 { try file.resize(to: size - torn) }
                try file.writeAll(record)
            }
        }
    }

    /// The stored bytes of chunk `index` of `id`: 65,536 bytes, fewer for the data file's last chunk; `nil` when the
    /// index was never recorded or the data file is missing or too short to hold it.
    func read(_ id: AttachmentID, index: Int) -> [UInt8]? {
        guard index >= 0, index <= Int(UInt32.max) else { return nil }
        let paths = self.paths(id)
        // A chunk whose bytes were written but whose index record was not is unknown, exactly as storedIndices says.
        var listed = false
        Self.forEachIndexRecord(paths.index) { record in
            listed = record == UInt32(index)
            return !listed
        }
        guard listed, let file = try? Self.open(paths.data, .readOnly) else { return nil }
        defer { try? file.close() }
        guard let fileSize = try? file.stat().size else { return nil }
        let offset = Int64(index) * Int64(MerkleTree.chunkSize)
        guard offset < fileSize else { return nil }
        let length = Int(min(Int64(MerkleTree.chunkSize), fileSize - offset))
        var complete = false
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            let read = try? Self.readFully(
                file, into: UnsafeMutableRawBufferPointer(buffer), at: offset, path: paths.data)
            complete = read == length
            count = complete ? length : 0
        }
        return complete ? bytes : nil
    }

    /// The chunk indices recorded for `id`, ascending, each once. A torn trailing record (a crash mid-append) is
    /// ignored, and so is any index whose chunk would start at or past the end of the data file: its bytes are
    /// certainly not there.
    func storedIndices(_ id: AttachmentID) -> [Int] {
        let paths = self.paths(id)
        guard let size = try? FilePath(paths.data).stat().size else { return [] }
        let chunksInFile = MerkleTree.chunkCount(forSize: UInt64(max(0, size)))
        var seen = Set<UInt32>()
        Self.forEachIndexRecord(paths.index) { record in
            if UInt64(record) < chunksInFile { seen.insert(record) }
            return true
        }
        return seen.map { Int($0) }.sorted()
    }

    /// Deletes both files of `id`; files that do not exist are not an error.
    func delete(_ id: AttachmentID) {
        let paths = self.paths(id)
        unlink(paths.data)
        unlink(paths.index)
    }

    // MARK: - Whole attachments

    /// The data file of `id`: once every chunk is stored, the attachment itself.
    func dataURL(_ id: AttachmentID) -> URL {
        directory.appendingPathComponent(Self.fileName(id) + ".data")
    }

    /// Deletes the directory and everything in it, when the session ends or the node shuts down. Best effort: what
    /// cannot be deleted stays, and is verified again should a store be opened over it later.
    func removeDirectory() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stores `bytes` as attachment `id` (what its author does before adding it), hashing in the same pass: the data
    /// file, then an index listing every chunk. Replaces whatever was stored for `id`; on failure nothing of `id` is
    /// left.
    ///
    /// - Returns: the leaf hashes and root as ``MerkleLeafHasher`` computes them (for zero bytes: no leaves and
    ///   ``MerkleTree/emptyRoot``), and the size.
    func importBytes(
        _ id: AttachmentID, _ bytes: UnsafeRawBufferPointer
    ) throws(StorageError) -> (leaves: [UInt8], root: [UInt8], size: UInt64) {
        guard UInt64(bytes.count) <= Self.maxAttachmentSize else {
            throw .tooLarge(size: UInt64(bytes.count), limit: Self.maxAttachmentSize)
        }
        let dataPath = paths(id).data
        return try importAttachment(id) { file, hasher throws(StorageError) in
            var offset = 0
            while offset < bytes.count {
                let piece = UnsafeRawBufferPointer(rebasing: bytes[offset..<min(offset + Self.pieceSize, bytes.count)])
                hasher.update(piece)
                try Self.call(Self.writeFailure("write", dataPath)) {
                    try file.writeAll(toAbsoluteOffset: Int64(offset), piece)
                }
                offset += piece.count
            }
        }
    }

    /// Stores the regular file at `file` as attachment `id`, like ``importBytes(_:_:)`` but reading the source in
    /// 1 MiB pieces, so memory stays flat whatever its size.
    ///
    /// A source larger than `limit` is refused before anything is written; one that grows past `limit` while it is
    /// read is refused too, so the result never exceeds what the caller allowed. A source that cannot be opened or
    /// read throws ``StorageError/unreadable(path:errno:)``; a device, FIFO or socket throws
    /// ``StorageError/notRegularFile(path:kind:)``.
    func importFile(
        _ id: AttachmentID, from file: URL, limit: UInt64
    ) throws(StorageError) -> (leaves: [UInt8], root: [UInt8], size: UInt64) {
        let sourcePath = file.path
        let unreadable = { (code: Int32) in StorageError.unreadable(path: sourcePath, errno: code) }
        // nonBlocking: opening a FIFO for reading would otherwise wait for a writer forever. A regular file ignores it.
        let source = try Self.call(unreadable) { try Self.open(sourcePath, .readOnly, options: .nonBlocking) }
        defer { try? source.close() }
        let status = try Self.call(unreadable) { try source.stat() }
        guard status.type != .directory else { throw unreadable(Errno.isDirectory.rawValue) }
        guard status.type == .regular else {
            throw .notRegularFile(path: sourcePath, kind: StorageError.kind(ofFileType: status.type.rawValue))
        }
        let limit = min(limit, Self.maxAttachmentSize)
        let size = UInt64(max(0, status.size))
        guard size <= limit else { throw .tooLarge(size: size, limit: limit) }

        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.pieceSize, alignment: 16)
        defer { buffer.deallocate() }
        let dataPath = paths(id).data
        return try importAttachment(id) { file, hasher throws(StorageError) in
            var total: UInt64 = 0
            while true {
                let count = try Self.call(unreadable) { try source.read(into: buffer) }
                if count == 0 { return }
                guard total + UInt64(count) <= limit else { throw .tooLarge(size: total + UInt64(count), limit: limit) }
                let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                hasher.update(piece)
                try Self.call(Self.writeFailure("write", dataPath)) {
                    try file.writeAll(toAbsoluteOffset: Int64(total), piece)
                }
                total += UInt64(count)
            }
        }
    }

    /// Copies the first `size` bytes of `id`'s data file to `destination` in 1 MiB pieces, so that `destination` is
    /// either untouched or the complete copy: the bytes go to a new hidden file beside it
    /// (`.<name>.partial-<random>`), which is synced and then renamed over `destination`. On failure the temporary
    /// file is removed. Errors writing name `destination`, the file the person asked for.
    func copyData(_ id: AttachmentID, size: UInt64, to destination: URL) throws(StorageError) {
        let dataPath = paths(id).data
        let destinationPath = destination.path
        let folder = destination.deletingLastPathComponent().path
        let source = try Self.openForReading(Self.readablePath(dataPath, size: size), reportedAs: dataPath)
        defer { try? source.close() }
        try Self.requireLength(source, size, path: dataPath)

        let (file, temporary) = try Self.createTemporaryFile(
            in: folder, name: destination.lastPathComponent, reportedAs: destinationPath)
        var renamed = false
        defer {
            if !renamed { unlink(temporary) }
        }
        do throws(StorageError) {
            try Self.readPieces(source, size: size, path: dataPath) { piece, offset throws(StorageError) in
                try Self.call(Self.writeFailure("write", destinationPath)) {
                    _ = try file.writeAll(toAbsoluteOffset: Int64(offset), piece)
                }
            }
            guard fsync(file.rawValue) == 0 else { throw Self.writeFailure("write", destinationPath)(errno) }
        } catch {
            try? file.close()
            throw error
        }
        try Self.closeWritten(file, path: destinationPath)
        guard rename(temporary, destinationPath) == 0 else {
            throw .io(operation: "replace", path: destinationPath, errno: errno)
        }
        renamed = true
        Self.syncDirectory(folder)
    }

    /// The file to read the first `size` bytes of an attachment from: its data file, or for an empty attachment
    /// `/dev/null`, because a receiver of an empty attachment verifies no chunk and so never writes a data file.
    private static func readablePath(_ dataPath: String, size: UInt64) -> String {
        size == 0 ? "/dev/null" : dataPath
    }

    /// The BLAKE2b-512 digest of the first `size` bytes of `id`'s data file, read in ``pieceSize`` pieces.
    func digest(_ id: AttachmentID, size: UInt64) throws(StorageError) -> [UInt8] {
        let dataPath = paths(id).data
        let source = try Self.openForReading(Self.readablePath(dataPath, size: size), reportedAs: dataPath)
        defer { try? source.close() }
        try Self.requireLength(source, size, path: dataPath)
        var hasher = try! BLAKE2b(outputLength: 64)
        try Self.readPieces(source, size: size, path: dataPath) { piece, _ in hasher.update(piece) }
        return hasher.finalize()
    }

    /// Reads the first `size` bytes of `source` in ``pieceSize`` pieces through one buffer, handing each piece and
    /// its offset to `body`. Throws if the file holds fewer bytes than `size` (it shrank since its length was
    /// checked).
    private static func readPieces(
        _ source: FileDescriptor, size: UInt64, path: String,
        _ body: (UnsafeRawBufferPointer, UInt64) throws(StorageError) -> Void
    ) throws(StorageError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset: UInt64 = 0
        while offset < size {
            let piece = UnsafeMutableRawBufferPointer(
                rebasing: buffer[0..<Int(min(UInt64(pieceSize), size - offset))])
            let count = try readFully(source, into: piece, at: Int64(offset), path: path)
            guard count == piece.count else { throw shrank(path) }
            try body(UnsafeRawBufferPointer(piece), offset)
            offset += UInt64(count)
        }
    }

    /// The first `size` bytes of `id`'s data file, in memory (for attachments small enough to load whole). The data
    /// file's length is checked before `size` bytes are allocated, so a wrong size fails instead of allocating it.
    func readData(_ id: AttachmentID, size: UInt64) throws(StorageError) -> [UInt8] {
        let dataPath = paths(id).data
        let file = try Self.openForReading(Self.readablePath(dataPath, size: size), reportedAs: dataPath)
        defer { try? file.close() }
        try Self.requireLength(file, size, path: dataPath)
        var failure: StorageError?
        // requireLength bounds size by the file's length, an Int64.
        let bytes = [UInt8](unsafeUninitializedCapacity: Int(size)) { buffer, count in
            do throws(StorageError) {
                let read = try Self.readFully(file, into: UnsafeMutableRawBufferPointer(buffer), at: 0, path: dataPath)
                // The data file shrank since its length was checked.
                guard read == buffer.count else { throw Self.shrank(dataPath) }
                count = read
            } catch {
                failure = error
                count = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    // MARK: - Helpers

    /// The file name stem of `id`: its 16 bytes as 32 lowercase hex digits.
    static func fileName(_ id: AttachmentID) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var name: [UInt8] = []
        name.reserveCapacity(id.bytes.count * 2)
        for byte in id.bytes {
            name.append(digits[Int(byte >> 4)])
            name.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// The paths of `id`'s data and index files.
    private func paths(_ id: AttachmentID) -> (data: String, index: String) {
        let stem = directoryPath + "/" + Self.fileName(id)
        return (stem + ".data", stem + ".index")
    }

    /// Writes the data file and then the index of attachment `id`, with `fill` writing the bytes into the data file
    /// and feeding them to the hasher. The index (every chunk, in one write) comes last, so an import cut short never
    /// lists a chunk; on failure both files are deleted so no half-imported attachment is left to be served.
    private func importAttachment(
        _ id: AttachmentID, fill: (FileDescriptor, inout MerkleLeafHasher) throws(StorageError) -> Void
    ) throws(StorageError) -> (leaves: [UInt8], root: [UInt8], size: UInt64) {
        let paths = self.paths(id)
        do throws(StorageError) {
            var hasher = MerkleLeafHasher()
            try Self.withWritableFile(paths.data, options: .truncate) { file throws(StorageError) in
                try fill(file, &hasher)
            }
            let size = hasher.byteCount
            let (leaves, root) = hasher.finalize()
            let records = Self.records(0..<UInt32(MerkleTree.chunkCount(forSize: size)))
            try Self.withWritableFile(paths.index, options: .truncate) { file throws(StorageError) in
                try Self.call(Self.writeFailure("write", paths.index)) { try file.writeAll(records) }
            }
            return (leaves, root, size)
        } catch {
            delete(id)
            throw error
        }
    }

    /// The index records of `indices`, little-endian.
    private static func records(_ indices: Range<UInt32>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(indices.count * recordSize)
        for index in indices {
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: index >> shift)) }
        }
        return bytes
    }

    /// Calls `body` with each complete record of the index file at `path`, in file order, until it returns `false`.
    /// A missing or unreadable index has no records; a trailing partial record (an append cut short) is skipped. The
    /// file is read in pieces, so even a damaged, huge index costs no more memory than one piece.
    private static func forEachIndexRecord(_ path: String, _ body: (UInt32) -> Bool) {
        guard let file = try? open(path, .readOnly) else { return }
        defer { try? file.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            // A piece is a whole number of records, so only the file's end can split one.
            guard let count = try? readFully(file, into: buffer, at: offset, path: path), count > 0 else {
                return
            }
            var position = 0
            while position + recordSize <= count {
                var record: UInt32 = 0
                for byte in 0..<recordSize { record |= UInt32(buffer[position + byte]) << (8 * byte) }
                guard body(record) else { return }
                position += recordSize
            }
            guard count == buffer.count else { return }
            offset += Int64(count)
        }
    }

    /// Opens `path` (always close-on-exec; a file it creates gets mode 0600). swift-system retries an open a signal
    /// interrupted.
    private static func open(
        _ path: String, _ mode: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = []
    ) throws -> FileDescriptor {
        try FileDescriptor.open(
            FilePath(path), mode, options: options.union(.closeOnExec),
            permissions: options.contains(.create) ? .ownerReadWrite : nil)
    }

    /// Opens `path` for reading; a failure is reported as an error opening `reportedAs`.
    private static func openForReading(_ path: String, reportedAs: String) throws(StorageError) -> FileDescriptor {
        try call({ .io(operation: "open", path: reportedAs, errno: $0) }) { try open(path, .readOnly) }
    }

    /// Runs a swift-system call, turning the `Errno` it throws into `failure(code)`: the one place this store maps
    /// system errors into ``StorageError``.
    @discardableResult
    private static func call<Value>(
        _ failure: (Int32) -> StorageError, _ body: () throws -> Value
    ) throws(StorageError) -> Value {
        do {
            return try body()
        } catch {
            throw failure(code(of: error))
        }
    }

    /// The system's code for an error a swift-system call threw (`EIO` for anything that is not an `Errno`).
    private static func code(of error: any Error) -> Int32 {
        (error as? Errno ?? .ioError).rawValue
    }

    /// Opens (creating if needed) `path` for writing with the extra `options`, runs `body` on it and closes it,
    /// checking the close too: some file systems (NFS) report a failed write, such as a full disk, only then.
    @discardableResult
    private static func withWritableFile<Value>(
        _ path: String, options: FileDescriptor.OpenOptions, _ body: (FileDescriptor) throws(StorageError) -> Value
    ) throws(StorageError) -> Value {
        let file = try call(writeFailure("open", path)) { try open(path, .writeOnly, options: options.union(.create)) }
        let result: Value
        do throws(StorageError) {
            result = try body(file)
        } catch {
            try? file.close()
            throw error
        }
        try closeWritten(file, path: path)
        return result
    }

    /// Closes a file that was written to, reporting a delayed write failure. An interrupted close is not a failure:
    /// on Linux the descriptor is closed regardless, and retrying could close another thread's new descriptor.
    private static func closeWritten(_ file: FileDescriptor, path: String) throws(StorageError) {
        do {
            try file.close()
        } catch Errno.interrupted {
            return
        } catch {
            throw writeFailure("write", path)(code(of: error))
        }
    }

    /// Reads from `offset` until `buffer` is full or the file ends, continuing after short reads (swift-system
    /// retries interrupted ones). Returns how many bytes were read: fewer than `buffer.count` only at the end of the
    /// file.
    private static func readFully(
        _ file: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String
    ) throws(StorageError) -> Int {
        var done = 0
        while done < buffer.count {
            let count = try call({ .io(operation: "read", path: path, errno: $0) }) {
                try file.read(
                    fromAbsoluteOffset: offset + Int64(done),
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Checks that the open file at `path` holds at least `size` bytes, so a caller can trust `size` before
    /// allocating or copying that much. A short file is reported as `ENODATA`.
    private static func requireLength(_ file: FileDescriptor, _ size: UInt64, path: String) throws(StorageError) {
        let length = try call({ .io(operation: "read", path: path, errno: $0) }) { try file.stat().size }
        guard UInt64(max(0, length)) >= size else { throw shrank(path) }
    }

    /// A file that holds fewer bytes than it did when its length was checked (`ENODATA`).
    private static func shrank(_ path: String) -> StorageError {
        .io(operation: "read", path: path, errno: Errno.noData.rawValue)
    }

    /// The error for a failed write to `path`, given the system's code. A full file system or quota is told apart
    /// because the person can fix it by freeing space.
    private static func writeFailure(_ operation: String, _ path: String) -> (Int32) -> StorageError {
        { code in
            code == Errno.noSpace.rawValue || code == Errno.diskQuotaExceeded.rawValue
                ? .diskFull(path: path) : .io(operation: operation, path: path, errno: code)
        }
    }

    /// Creates `path` and its missing parents with mode 0700. An existing directory is fine; an existing file of
    /// another kind is reported as `ENOTDIR`.
    private static func createDirectory(_ path: String) throws(StorageError) {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o700) != 0 {
                let code = errno
                guard code == EEXIST else { throw writeFailure("create the directory", partial)(code) }
            }
        }
        let type = try call({ .io(operation: "create the directory", path: path, errno: $0) }) {
            try FilePath(path).stat().type
        }
        guard type == .directory else {
            throw .io(operation: "create the directory", path: path, errno: Errno.notDirectory.rawValue)
        }
    }

    /// Creates a new hidden file `.<name>.partial-<random>` in `folder` exclusively (never through a symlink, never
    /// reusing an existing file), trying fresh random suffixes on collisions. Errors name `reportedAs`.
    private static func createTemporaryFile(
        in folder: String, name: String, reportedAs: String
    ) throws(StorageError) -> (FileDescriptor, String) {
        var code = Errno.fileExists.rawValue
        for _ in 0..<16 {
            let suffix = String(UInt64.random(in: .min ... .max), radix: 16)
            let temporary = "\(folder)/.\(name).partial-\(suffix)"
            do {
                return (try open(temporary, .writeOnly, options: [.create, .exclusiveCreate, .noFollow]), temporary)
            } catch {
                code = Self.code(of: error)
                guard code == Errno.fileExists.rawValue else { break }
            }
        }
        throw writeFailure("create a file beside", reportedAs)(code)
    }

    /// Makes a rename in `folder` durable. Best effort: if the directory cannot be synced, the copy is still complete
    /// and only a power cut at the wrong moment could lose it.
    private static func syncDirectory(_ folder: String) {
        guard let directory = try? open(folder.isEmpty ? "/" : folder, .readOnly, options: .directory) else { return }
        _ = fsync(directory.rawValue)
        try? directory.close()
    }
}

extension FileChunkStore {
    /// Stores a verified chunk for the journal core, reporting a full disk as ``JournalStoreError/outOfSpace(_:)`` so
    /// the application gets ``HuddleError/storage(_:)`` with ``StorageError/diskFull(path:)``.
    func write(_ id: AttachmentID, index: Int, bytes: [UInt8]) throws {
        do {
            try writeChunk(id, index: index, bytes: bytes)
        } catch .diskFull {
            throw JournalStoreError.outOfSpace(StorageError.diskFull(path: dataURL(id).path))
        } catch {
            throw JournalStoreError.failed(error)
        }
    }
}
