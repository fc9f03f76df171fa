import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import NIOConcurrencyHelpers
import NIOPosix
import Testing

@testable import Huddle

/// The off-loop store worker: order, backpressure at its named limit, and closing.
@Suite("Chunk store worker")
struct ChunkStoreWorkerTests {
    /// What the worker handed back and how often it resumed the input.
    final class Recorder: Sendable {
        let completions = NIOLockedValueBox<[JournalStoreCompletion]>([])
        let resumes = NIOLockedValueBox(0)
    }

    static let id = AttachmentID(bytes: [UInt8](repeating: 7, count: AttachmentID.length))!
    static let peer = try! X25519PublicKey(bytes: [UInt8](repeating: 1, count: 32))

    static func chunk(_ index: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: MerkleTree.chunkSize)
    }

    /// A worker over a fresh store on a one-thread pool that `gate` holds busy until it is signalled.
    static func withBlockedWorker(
        _ body: (ChunkStoreWorker, Recorder, DispatchSemaphore) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("huddle-worker-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileChunkStore(directory: directory)
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let gate = DispatchSemaphore(value: 0)
        pool.submit { _ in gate.wait() }
        let recorder = Recorder()
        let worker = ChunkStoreWorker(
            store: store, pool: pool,
            handBack: { completions in recorder.completions.withLockedValue { $0 += completions } },
            resumeInput: { recorder.resumes.withLockedValue { $0 += 1 } })
        try await body(worker, recorder, gate)
        await worker.close()
        try await pool.shutdownGracefully()
    }

    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "timed out")
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("Writes beyond maxBacklogBytes stop the input, which resumes once half is written; results come in order")
    func backlogLimit() async throws {
        try await Self.withBlockedWorker { worker, recorder, gate in
            let perLimit = ChunkStoreWorker.maxBacklogBytes / MerkleTree.chunkSize
            // One chunk short of the limit: still admitted.
            worker.submit((0..<(perLimit - 1)).map { Self.write($0) })
            #expect(worker.admitsInput())
            // At the limit: refused, and remembered.
            worker.submit([Self.write(perLimit - 1)])
            #expect(worker.backlogBytes == ChunkStoreWorker.maxBacklogBytes)
            #expect(!worker.admitsInput())
            #expect(recorder.resumes.withLockedValue { $0 } == 0)
            // A read and an event queued behind the writes.
            worker.submit([
                ChunkStoreWorker.Job(action: .readChunk(Self.id, index: perLimit - 1, for: Self.peer), verifier: nil),
                ChunkStoreWorker.Job(action: .event(.completed(Self.id)), verifier: nil),
            ])
            gate.signal()
            try await Self.waitUntil { recorder.completions.withLockedValue { $0.count } == perLimit + 2 }
            #expect(recorder.resumes.withLockedValue { $0 } == 1, "resumed once")
            #expect(worker.backlogBytes == 0)
            #expect(worker.admitsInput())
            let completions = recorder.completions.withLockedValue { $0 }
            for (index, completion) in completions.prefix(perLimit).enumerated() {
                guard case .written(_, let written, let failure) = completion else {
                    Issue.record("completion \(index) is \(completion)")
                    continue
                }
                #expect(written == index && failure == nil)
            }
            // No verifier (the attachment has no leaves here): the read reports nothing rather than unchecked bytes.
            if case .read(_, let index, let bytes, _) = completions[perLimit] {
                #expect(index == perLimit - 1 && bytes == nil)
            } else {
                Issue.record("expected the read after the writes, got \(completions[perLimit])")
            }
            if case .event(.completed(let id)) = completions[perLimit + 1] {
                #expect(id == Self.id)
            } else {
                Issue.record("expected the event last, got \(completions[perLimit + 1])")
            }
        }
    }

    @Test("A read verified against the leaf list returns the bytes written before it")
    func verifiedRead() async throws {
        try await Self.withBlockedWorker { worker, recorder, gate in
            let data = Self.chunk(3) + Self.chunk(4)
            var hasher = MerkleLeafHasher()
            hasher.update(data)
            let leaves = hasher.finalize().leaves
            let verifier = ChunkVerifier(leaves: leaves, size: UInt64(data.count))
            worker.submit([
                ChunkStoreWorker.Job(action: .writeChunk(Self.id, index: 1, bytes: Self.chunk(4)), verifier: nil),
                ChunkStoreWorker.Job(action: .readChunk(Self.id, index: 1, for: Self.peer), verifier: verifier),
                ChunkStoreWorker.Job(action: .scanStore(Self.id), verifier: verifier),
            ])
            gate.signal()
            try await Self.waitUntil { recorder.completions.withLockedValue { $0.count } == 3 }
            let completions = recorder.completions.withLockedValue { $0 }
            if case .read(_, 1, let bytes, _) = completions[1] {
                #expect(bytes == Self.chunk(4))
            } else {
                Issue.record("\(completions[1])")
            }
            if case .scanned(_, let verified) = completions[2] {
                #expect(verified == [1])
            } else {
                Issue.record("\(completions[2])")
            }
        }
    }

    @Test("Closing drops the jobs not started, hands nothing back and returns once the running one is done")
    func closing() async throws {
        try await Self.withBlockedWorker { worker, recorder, gate in
            worker.submit((0..<4).map { Self.write($0) })
            let closed = Task { await worker.close() }
            // The drain has not started (the pool's thread is held): close must not wait for the queued writes.
            try await Task.sleep(for: .milliseconds(50))
            gate.signal()
            await closed.value
            worker.submit([Self.write(9)])
            try await Task.sleep(for: .milliseconds(50))
            #expect(recorder.completions.withLockedValue { $0.isEmpty })
            #expect(worker.backlogBytes == 0)
        }
    }

    static func write(_ index: Int) -> ChunkStoreWorker.Job {
        ChunkStoreWorker.Job(action: .writeChunk(Self.id, index: index, bytes: Self.chunk(index)), verifier: nil)
    }
}
