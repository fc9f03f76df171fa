import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

/// Runs `body` with a fresh directory under the system's temporary directory, removed afterwards whatever happens.
private func withTemporaryDirectory<Value>(_ body: (URL) throws -> Value) throws -> Value {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("huddle-store-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}

/// A store over a subdirectory of `directory` that does not exist yet, so every test also exercises creating it.
private func makeStore(in directory: URL) throws -> FileChunkStore {
    try FileChunkStore(directory: directory.appendingPathComponent("store"))
}

/// Runs a program found on the PATH and returns its exit status.
private func run(_ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

private func contents(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

private func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

@Suite("File chunk store")
struct FileChunkStoreTests {
    static let chunk = MerkleTree.chunkSize
    static let sizes = [0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 17]

    static func id(_ seed: UInt8) -> AttachmentID { AttachmentID(bytes: (0..<16).map { $0 &+ seed })! }

    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = ChaChaRandomGenerator(seed: seed)
        return random.bytes(count: count)
    }

    /// What MerkleLeafHasher computes over `bytes` fed in one go.
    static func expectedHashes(_ bytes: [UInt8]) -> (leaves: [UInt8], root: [UInt8]) {
        var hasher = MerkleLeafHasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Checks everything an imported attachment promises: its files, its index and every chunk.
    static func expectImported(
        _ store: FileChunkStore, _ id: AttachmentID, _ bytes: [UInt8],
        _ result: (leaves: [UInt8], root: [UInt8], size: UInt64)
    ) throws {
        let expected = expectedHashes(bytes)
        #expect(result.leaves == expected.leaves)
        #expect(result.root == expected.root)
        #expect(result.size == UInt64(bytes.count))
        #expect(try contents(store.dataURL(id)) == bytes)
        let chunkCount = Int(MerkleTree.chunkCount(forSize: UInt64(bytes.count)))
        #expect(store.storedIndices(id) == Array(0..<chunkCount))
        for index in 0..<chunkCount {
            let start = index * chunk
            #expect(store.read(id, index: index) == Array(bytes[start..<min(start + chunk, bytes.count)]))
        }
        #expect(store.read(id, index: chunkCount) == nil)
    }

    @Test("The store directory and its parents are created with mode 0700, and the file names are the hex id")
    func directoryAndNames() throws {
        try withTemporaryDirectory { temporary in
            let store = try FileChunkStore(directory: temporary.appendingPathComponent("a/b"))
            var status = stat()
            #expect(stat(store.directory.path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700)
            #expect(stat(temporary.appendingPathComponent("a").path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700)
            let id = AttachmentID(bytes: [0x00, 0x0f, 0xa0, 0xff] + [UInt8](repeating: 0x12, count: 12))!
            #expect(store.dataURL(id).lastPathComponent == "000fa0ff" + String(repeating: "12", count: 12) + ".data")
            try store.writeChunk(id, index: 0, bytes: [1])
            var fileStatus = stat()
            #expect(stat(store.dataURL(id).path, &fileStatus) == 0)
            #expect(fileStatus.st_mode & 0o777 == 0o600)
        }
    }

    @Test("Chunks round-trip, indices are sorted and listed once, an unwritten chunk reads as nil")
    func roundTrip() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(1)
            let first = Self.randomBytes(Self.chunk, seed: 1)
            let second = Self.randomBytes(Self.chunk, seed: 2)
            let last = Self.randomBytes(1000, seed: 3)
            #expect(store.storedIndices(id) == [])
            try store.writeChunk(id, index: 2, bytes: last)
            try store.writeChunk(id, index: 0, bytes: first)
            #expect(store.storedIndices(id) == [0, 2])
            #expect(store.read(id, index: 1) == nil)
            try store.writeChunk(id, index: 1, bytes: second)
            #expect(store.storedIndices(id) == [0, 1, 2])
            #expect(store.read(id, index: 0) == first)
            #expect(store.read(id, index: 1) == second)
            #expect(store.read(id, index: 2) == last)
            #expect(store.read(id, index: 3) == nil)
            #expect(store.read(id, index: -1) == nil)
            #expect(try contents(store.dataURL(id)) == first + second + last)

            let replacement = Self.randomBytes(Self.chunk, seed: 4)
            try store.writeChunk(id, index: 1, bytes: replacement)
            #expect(store.storedIndices(id) == [0, 1, 2])
            #expect(store.read(id, index: 1) == replacement)
            #expect(store.read(id, index: 0) == first)
            // Other attachments are unaffected.
            #expect(store.storedIndices(Self.id(2)) == [])
            #expect(store.read(Self.id(2), index: 0) == nil)
        }
    }

    @Test("A chunk longer than the chunk size or a negative index is refused")
    func invalidWrites() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(1)
            #expect(throws: StorageError.self) {
                try store.writeChunk(id, index: 0, bytes: [UInt8](repeating: 0, count: Self.chunk + 1))
            }
            #expect(throws: StorageError.self) { try store.writeChunk(id, index: -1, bytes: [1]) }
            #expect(store.storedIndices(id) == [])
        }
    }

    @Test("A torn trailing index record is ignored and repaired; indices beyond the data file are not listed")
    func tornIndex() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(1)
            let chunk0 = Self.randomBytes(Self.chunk, seed: 1)
            let chunk2 = Self.randomBytes(500, seed: 2)
            try store.writeChunk(id, index: 2, bytes: chunk2)
            try store.writeChunk(id, index: 0, bytes: chunk0)
            // A crash mid-append left half a record. Read as a record (zero-padded) it would claim chunk 1, which lies
            // inside the data file but was never written.
            let index = store.directory.appendingPathComponent(FileChunkStore.fileName(id) + ".index")
            let handle = try FileHandle(forWritingTo: index)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data([0x01, 0x00]))
            try handle.close()
            #expect(try contents(index).count == 10)
            #expect(store.storedIndices(id) == [0, 2])
            #expect(store.read(id, index: 0) == chunk0)
            #expect(store.read(id, index: 1) == nil)
            #expect(store.read(id, index: 2) == chunk2)
            // The next write cuts the partial record off, so its own record and later ones stay aligned.
            let chunk1 = Self.randomBytes(Self.chunk, seed: 3)
            try store.writeChunk(id, index: 1, bytes: chunk1)
            #expect(try contents(index).count == 12)
            let reopened = try FileChunkStore(directory: store.directory)
            #expect(reopened.storedIndices(id) == [0, 1, 2])
            #expect(reopened.read(id, index: 1) == chunk1)

            // An index record whose chunk lies past the end of the data file (its bytes never arrived) is not listed.
            let other = Self.id(2)
            try store.writeChunk(other, index: 0, bytes: chunk0)
            let otherIndex = store.directory.appendingPathComponent(FileChunkStore.fileName(other) + ".index")
            try Data([0, 0, 0, 0, 5, 0, 0, 0]).write(to: otherIndex)
            #expect(store.storedIndices(other) == [0])
            #expect(store.read(other, index: 5) == nil)
        }
    }

    @Test("A new store over the same directory sees the chunks stored before (resume after a restart)")
    func reopen() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(7)
            let chunk0 = Self.randomBytes(Self.chunk, seed: 8)
            let chunk3 = Self.randomBytes(Self.chunk, seed: 9)
            try store.writeChunk(id, index: 3, bytes: chunk3)
            try store.writeChunk(id, index: 0, bytes: chunk0)

            let reopened = try FileChunkStore(directory: store.directory)
            #expect(reopened.storedIndices(id) == [0, 3])
            #expect(reopened.read(id, index: 0) == chunk0)
            #expect(reopened.read(id, index: 3) == chunk3)
            // The gap between them is a hole in the data file, not a stored chunk.
            #expect(reopened.read(id, index: 1) == nil)
        }
    }

    @Test("importBytes stores the attachment and returns its leaves and root", arguments: sizes)
    func importBytes(size: Int) throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(3)
            let bytes = Self.randomBytes(size, seed: UInt64(size))
            let result = try bytes.withUnsafeBytes { try store.importBytes(id, $0) }
            try Self.expectImported(store, id, bytes, result)
            if size == 0 {
                #expect(result.leaves.isEmpty)
                #expect(result.root == MerkleTree.emptyRoot)
            }
        }
    }

    @Test("importFile stores the file and returns its leaves and root", arguments: sizes)
    func importFile(size: Int) throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(4)
            let bytes = Self.randomBytes(size, seed: UInt64(size) + 100)
            let source = temporary.appendingPathComponent("source.bin")
            try Data(bytes).write(to: source)
            let result = try store.importFile(id, from: source, limit: UInt64(size))
            try Self.expectImported(store, id, bytes, result)
            if size == 0 {
                #expect(result.leaves.isEmpty)
                #expect(result.root == MerkleTree.emptyRoot)
            }
        }
    }

    @Test("An import replaces what was stored for the attachment")
    func importReplaces() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(5)
            try store.writeChunk(id, index: 4, bytes: Self.randomBytes(Self.chunk, seed: 1))
            let bytes = Self.randomBytes(Self.chunk + 3, seed: 2)
            let result = try bytes.withUnsafeBytes { try store.importBytes(id, $0) }
            try Self.expectImported(store, id, bytes, result)
        }
    }

    @Test("importFile refuses a file over the limit and leaves nothing behind")
    func importTooLarge() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(6)
            let source = temporary.appendingPathComponent("big.bin")
            try Data(Self.randomBytes(Self.chunk + 1, seed: 6)).write(to: source)
            #expect(throws: StorageError.tooLarge(size: UInt64(Self.chunk + 1), limit: UInt64(Self.chunk))) {
                try store.importFile(id, from: source, limit: UInt64(Self.chunk))
            }
            #expect(!exists(store.dataURL(id)))
            #expect(!exists(store.directory.appendingPathComponent(FileChunkStore.fileName(id) + ".index")))
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory.path).isEmpty)
        }
    }

    @Test("An import that fails after writing has begun leaves no files of the attachment behind")
    func importFailureCleansUp() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(8)
            // A directory where the index belongs: the data file is written, then opening the index fails.
            let index = store.directory.appendingPathComponent(FileChunkStore.fileName(id) + ".index")
            try FileManager.default.createDirectory(at: index, withIntermediateDirectories: false)
            let bytes = Self.randomBytes(Self.chunk + 9, seed: 8)
            #expect(throws: StorageError.io(operation: "open", path: index.path, errno: EISDIR)) {
                try bytes.withUnsafeBytes { try store.importBytes(id, $0) }
            }
            let source = temporary.appendingPathComponent("source.bin")
            try Data(bytes).write(to: source)
            #expect(throws: StorageError.io(operation: "open", path: index.path, errno: EISDIR)) {
                try store.importFile(id, from: source, limit: 1 << 20)
            }
            #expect(!exists(store.dataURL(id)))
            #expect(store.storedIndices(id) == [])
        }
    }

    @Test("importFile refuses a device and a FIFO as not regular files at once (no 'Invalid argument', no hang)")
    func importSpecialFiles() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let fifo = temporary.appendingPathComponent("pipe")
            #expect(mkfifo(fifo.path, 0o600) == 0)
            for (path, kind) in [("/dev/zero", "a character device"), (fifo.path, "a FIFO")] {
                #expect(throws: StorageError.notRegularFile(path: path, kind: kind)) {
                    try store.importFile(Self.id(7), from: URL(fileURLWithPath: path), limit: 1 << 20)
                }
                let message = HuddleError(StorageError.notRegularFile(path: path, kind: kind)).description
                #expect(message == "cannot share \(path): not a regular file (\(kind)); share a regular file")
                #expect(!message.contains("Invalid argument"))
            }
        }
    }

    @Test("Store failures read as one sentence through HuddleError: nothing said twice")
    func publicErrorWording() {
        let full = HuddleError(StorageError.diskFull(path: "/data/a.data")).description
        #expect(full.components(separatedBy: "disk is full").count == 2, "\(full)")
        #expect(full.contains("/data/a.data"))
        let fromCore = HuddleError(
            JournalStoreError.outOfSpace(StorageError.diskFull(path: "/data/b.data"))
        ).description
        #expect(fromCore.components(separatedBy: "disk is full").count == 2, "\(fromCore)")
        let unreadable = HuddleError(StorageError.unreadable(path: "/a/b", errno: ENOENT)).description
        #expect(unreadable == "cannot read /a/b: No such file or directory")
    }

    @Test("importFile reports a missing path or a directory as unreadable")
    func importUnreadable() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(6)
            let missing = temporary.appendingPathComponent("missing.bin")
            #expect(throws: StorageError.unreadable(path: missing.path, errno: ENOENT)) {
                try store.importFile(id, from: missing, limit: 1 << 20)
            }
            #expect(throws: StorageError.unreadable(path: temporary.path, errno: EISDIR)) {
                try store.importFile(id, from: temporary, limit: 1 << 20)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory.path).isEmpty)
            #expect(
                StorageError.unreadable(path: "/a/b", errno: ENOENT).description
                    == "cannot read /a/b: No such file or directory")
        }
    }

    @Test("copyData writes a byte-identical file through a temporary that does not stay; readData loads the bytes")
    func copyAndLoad() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let outputs = temporary.appendingPathComponent("out")
            try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
            for (offset, size) in [0, 1, 3 * Self.chunk + 17, 17 * Self.chunk + 5].enumerated() {
                let id = Self.id(UInt8(offset))
                let bytes = Self.randomBytes(size, seed: UInt64(size) + 7)
                _ = try bytes.withUnsafeBytes { try store.importBytes(id, $0) }
                let destination = outputs.appendingPathComponent("copy-\(size).bin")
                // An existing file at the destination is replaced.
                try Data([9, 9, 9]).write(to: destination)
                try store.copyData(id, size: UInt64(size), to: destination)
                #expect(try contents(destination) == bytes)
                #expect(try store.readData(id, size: UInt64(size)) == bytes)
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: outputs.path).sorted()
            #expect(names == ["copy-0.bin", "copy-1.bin", "copy-1114117.bin", "copy-196625.bin"])

            // Asking for more than the data file holds fails before allocating or writing anything.
            let id = Self.id(1)
            let destination = outputs.appendingPathComponent("short.bin")
            #expect(throws: StorageError.self) { try store.copyData(id, size: 2, to: destination) }
            #expect(throws: StorageError.self) { try store.readData(id, size: 1 << 40) }
            #expect(!exists(destination))
            #expect(try FileManager.default.contentsOfDirectory(atPath: outputs.path).count == 4)
        }
    }

    @Test("delete removes both files; removeDirectory removes the directory")
    func deleteAndRemove() throws {
        try withTemporaryDirectory { temporary in
            let store = try makeStore(in: temporary)
            let id = Self.id(2)
            let kept = Self.id(3)
            try store.writeChunk(id, index: 0, bytes: [1, 2, 3])
            try store.writeChunk(kept, index: 0, bytes: [4])
            store.delete(id)
            #expect(!exists(store.dataURL(id)))
            #expect(!exists(store.directory.appendingPathComponent(FileChunkStore.fileName(id) + ".index")))
            #expect(store.storedIndices(id) == [])
            #expect(store.read(id, index: 0) == nil)
            store.delete(id)
            #expect(store.read(kept, index: 0) == [4])
            store.removeDirectory()
            #expect(!exists(store.directory))
            #expect(exists(temporary))
        }
    }

    @Test(
        "A full disk is reported as diskFull and leaves the chunks stored before it intact",
        .enabled(if: getuid() == 0, "needs root to mount a 1 MiB tmpfs"))
    func diskFull() throws {
        try withTemporaryDirectory { temporary in
            let mountPoint = temporary.appendingPathComponent("tmpfs")
            try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
            try #require(try run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path]) == 0)
            defer { _ = try? run(["umount", mountPoint.path]) }

            let store = try FileChunkStore(directory: mountPoint.appendingPathComponent("store"))
            let id = Self.id(9)
            var written: [[UInt8]] = []
            var failure: (any Error)?
            while written.count <= 16 {
                let chunk = Self.randomBytes(Self.chunk, seed: UInt64(written.count))
                do {
                    try store.writeChunk(id, index: written.count, bytes: chunk)
                    written.append(chunk)
                } catch {
                    failure = error
                    break
                }
            }
            let error = try #require(failure as? StorageError)
            guard case .diskFull(let path) = error else {
                Issue.record("expected diskFull, got \(error)")
                return
            }
            #expect(path.hasPrefix(store.directory.path))
            #expect((1...16).contains(written.count))
            #expect(store.storedIndices(id) == Array(0..<written.count))
            for (index, chunk) in written.enumerated() { #expect(store.read(id, index: index) == chunk) }

            // An import that runs out of space is reported the same way and leaves nothing behind.
            store.delete(id)
            let other = Self.id(10)
            let bytes = Self.randomBytes(2 << 20, seed: 10)
            #expect(throws: StorageError.diskFull(path: store.dataURL(other).path)) {
                try bytes.withUnsafeBytes { try store.importBytes(other, $0) }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory.path).isEmpty)
        }
    }
}
