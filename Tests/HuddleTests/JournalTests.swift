import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

struct PhotoInfo: Codable, Sendable, Equatable {
    var caption: String
}

/// Random bytes from a seed, so failures reproduce.
func seededBytes(_ count: Int, seed: UInt64) -> Data {
    var random = ChaChaRandomGenerator(seed: seed)
    return Data(random.bytes(count: count))
}

/// A node whose journal lives in `directory`.
func startNode(_ name: String, seed: UInt64, dataDirectory: URL) async throws -> HuddleNode {
    var random = ChaChaRandomGenerator(seed: seed)
    var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: name)
    configuration.dataDirectory = dataDirectory
    return try await HuddleNode.start(configuration)
}

/// A fresh temporary directory.
func temporaryDirectory(_ label: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appending(path: "huddle-test-\(label)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The files below `directory`, recursively (paths relative to it).
func files(in directory: URL) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
    return enumerator.compactMap { $0 as? String }.filter { path in
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(
            atPath: directory.appending(path: path).path, isDirectory: &isDirectory)
        return exists && !isDirectory.boolValue
    }
}

/// Waits for the first attachment list with `count` entries.
func attachments(_ journal: Journal, count: Int, _ what: String) async throws -> [Journal.Attachment] {
    try await withTimeout(30, what) {
        for await list in journal.attachmentUpdates where list.count == count { return list }
        return []
    }
}

/// Starts a session at `host` and joins `members` to it one after another.
func formSession(
    _ host: HuddleNode, _ members: [HuddleNode]
) async throws -> [GroupSession<DrawTogether>] {
    let session = try await host.activate(DrawTogether(canvas: "journal"))
    try await session.join()
    var sessions = [session]
    for member in members {
        let ticket = try await sessions.last!.makeInvitation(validFor: .seconds(600))
        sessions.append(
            try await withTimeout(20, "\(member) joins") { try await member.join(ticket, as: DrawTogether.self) })
    }
    return sessions
}

@Suite("Journal over loopback UDP", .serialized)
struct JournalTests {
    @Test("An attachment reaches every member and a late joiner after its author left, verified and byte-identical")
    func lateJoinerAfterAuthorLeft() async throws {
        let ann = try await startNode("ann", seed: 101)
        let bob = try await startNode("bob", seed: 102)
        let cat = try await startNode("cat", seed: 103)
        defer { Task { for node in [ann, bob, cat] { await node.shutdown() } } }
        let sessions = try await formSession(ann, [bob])
        let annJournal = Journal(session: sessions[0])
        let bobJournal = Journal(session: sessions[1])

        let photo = seededBytes(1_048_576 + 17, seed: 7)
        let added = try await annJournal.add(photo, metadata: PhotoInfo(caption: "sunset"))
        #expect(added.size == photo.count)
        #expect(added.author == sessions[0].localParticipant)
        #expect(added.progress.status.isComplete)

        let atBob = try await attachments(bobJournal, count: 1, "bob learns of the attachment")[0]
        #expect(atBob.id == added.id)
        #expect(atBob.author?.name == "ann")
        #expect(try atBob.loadMetadata(of: PhotoInfo.self) == PhotoInfo(caption: "sunset"))
        let loaded = try await withTimeout(30, "bob loads it") { try await atBob.load() }
        #expect(loaded == photo)
        #expect(atBob.progress.verifiedBytes == photo.count)
        #expect(try await atBob.digest() == (try await added.digest()))

        // Ann leaves; cat joins through bob's ticket and gets the attachment from bob alone.
        await sessions[0].leave()
        #expect(await eventually("bob sees ann leave") { sessions[1].activeParticipants.count == 1 })
        let ticket = try await sessions[1].makeInvitation(validFor: .seconds(600))
        let catSession = try await withTimeout(20, "cat joins") { try await cat.join(ticket, as: DrawTogether.self) }
        let atCat = try await attachments(Journal(session: catSession), count: 1, "cat learns of it")[0]
        #expect(atCat.author == nil, "cat never saw ann")
        #expect(atCat.authorID == ann.fingerprint)
        let destination = temporaryDirectory("save").appending(path: "photo.bin")
        defer { try? FileManager.default.removeItem(at: destination.deletingLastPathComponent()) }
        try await withTimeout(30, "cat saves it") { try await atCat.save(to: destination) }
        #expect(try Data(contentsOf: destination) == photo)
    }

    @Test(
        "Files of 0, 1, 65,535, 65,536 and 65,537 bytes arrive byte-identical",
        arguments: [0, 1, 65_535, 65_536, 65_537])
    func sizes(size: Int) async throws {
        let ann = try await startNode("ann", seed: 111)
        let bob = try await startNode("bob", seed: 112)
        defer { Task { for node in [ann, bob] { await node.shutdown() } } }
        let sessions = try await formSession(ann, [bob])
        let folder = temporaryDirectory("sizes")
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appending(path: "in.bin")
        let bytes = seededBytes(size, seed: UInt64(size))
        try bytes.write(to: source)

        let added = try await Journal(session: sessions[0]).add(contentsOf: source)
        #expect(added.size == size)
        let atBob = try await attachments(Journal(session: sessions[1]), count: 1, "bob learns of it")[0]
        let destination = folder.appending(path: "out.bin")
        try await withTimeout(30, "bob saves it") { try await atBob.save(to: destination) }
        #expect(try Data(contentsOf: destination) == bytes)
        #expect(atBob.progress.fraction == 1)
    }

    @Test("Over 100 MiB is refused at add with a typed error; nothing is stored or announced")
    func tooLarge() async throws {
        let annData = temporaryDirectory("ann")
        let ann = try await startNode("ann", seed: 121, dataDirectory: annData)
        let bob = try await startNode("bob", seed: 122)
        defer {
            Task {
                for node in [ann, bob] { await node.shutdown() }
                try? FileManager.default.removeItem(at: annData)
            }
        }
        let sessions = try await formSession(ann, [bob])
        let journal = Journal(session: sessions[0])
        let limit = Journal.maxAttachmentSize

        await #expect(throws: HuddleError.self) {
            _ = try await journal.add(Data(count: Journal.maxAttachmentSize + 1))
        }
        do {
            _ = try await journal.add(Data(count: Journal.maxAttachmentSize + 1))
        } catch HuddleError.attachmentTooLarge(let size, let reportedLimit) {
            #expect(size == limit + 1 && reportedLimit == limit)
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        // A sparse file of 100 MiB + 1 is refused from its size, before it is read.
        let folder = temporaryDirectory("large")
        defer { try? FileManager.default.removeItem(at: folder) }
        let large = folder.appending(path: "large.bin")
        #expect(FileManager.default.createFile(atPath: large.path, contents: nil))
        let handle = try FileHandle(forWritingTo: large)
        try handle.truncate(atOffset: UInt64(limit + 1))
        try handle.close()
        do {
            _ = try await journal.add(contentsOf: large)
            Issue.record("a file of 100 MiB + 1 was accepted")
        } catch HuddleError.attachmentTooLarge(let size, _) {
            #expect(size == limit + 1)
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        do {
            _ = try await journal.add(Data([1]), metadata: PhotoInfo(caption: String(repeating: "x", count: 17_000)))
            Issue.record("metadata over 16 KiB was accepted")
        } catch HuddleError.attachmentMetadataTooLarge(let size, let reportedLimit) {
            #expect(size > reportedLimit)
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        do {
            _ = try await journal.add(contentsOf: folder.appending(path: "missing.bin"))
            Issue.record("a missing file was accepted")
        } catch .storage(.unreadable(let path, let code)) {
            #expect(path.hasSuffix("missing.bin") && code == ENOENT, "\(path)")
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        #expect(journal.attachments.isEmpty)
        #expect(files(in: annData).isEmpty, "nothing stored: \(files(in: annData))")
        // A 100 MiB limit exactly is accepted (sparse: zeros), and then bob hears of it, but of nothing before.
        try FileManager.default.removeItem(at: large)
        #expect(FileManager.default.createFile(atPath: large.path, contents: nil))
        let exact = try FileHandle(forWritingTo: large)
        try exact.truncate(atOffset: UInt64(limit))
        try exact.close()
        let added = try await journal.add(contentsOf: large)
        #expect(added.size == Journal.maxAttachmentSize)
        let atBob = try await attachments(Journal(session: sessions[1]), count: 1, "bob hears of the 100 MiB one")
        #expect(atBob.map { $0.id } == [added.id])
    }

    @Test("Removing an attachment deletes it on every member; leaving deletes a member's session files")
    func removeAndLeave() async throws {
        let annData = temporaryDirectory("ann")
        let bobData = temporaryDirectory("bob")
        let ann = try await startNode("ann", seed: 131, dataDirectory: annData)
        let bob = try await startNode("bob", seed: 132, dataDirectory: bobData)
        defer {
            Task {
                for node in [ann, bob] { await node.shutdown() }
                for folder in [annData, bobData] { try? FileManager.default.removeItem(at: folder) }
            }
        }
        let sessions = try await formSession(ann, [bob])
        let annJournal = Journal(session: sessions[0])
        let bobJournal = Journal(session: sessions[1])
        let kept = try await annJournal.add(seededBytes(200_000, seed: 1))
        let doomed = try await annJournal.add(seededBytes(300_000, seed: 2))
        let atBob = try await attachments(bobJournal, count: 2, "bob learns of both")
        for attachment in atBob {
            _ = try await withTimeout(30, "bob completes \(attachment)") { try await attachment.load() }
        }
        #expect(files(in: bobData).count == 4, "two data files and two indexes: \(files(in: bobData))")

        // Any member may remove: bob removes ann's attachment, and it is gone everywhere.
        try await bobJournal.remove(atBob.first { $0.id == doomed.id }!)
        _ = try await attachments(annJournal, count: 1, "ann sees the removal")
        #expect(annJournal.attachments.map(\.id) == [kept.id])
        #expect(
            await eventually("both delete its files") { files(in: annData).count == 2 && files(in: bobData).count == 2 }
        )
        await #expect(throws: HuddleError.self) { _ = try await doomed.load() }
        await #expect(throws: HuddleError.self) { try await bobJournal.remove(atBob.first { $0.id == doomed.id }!) }

        // Leaving deletes the session's directory on the member that left; ann keeps hers.
        await sessions[1].leave()
        #expect(files(in: bobData).isEmpty, "bob left: \(files(in: bobData))")
        #expect(files(in: annData).count == 2)
        await #expect(throws: HuddleError.self) { _ = try await bobJournal.add(Data([1])) }
    }

    @Test("A temporary data directory is deleted when the node shuts down")
    func temporaryDirectoryDeleted() async throws {
        let ann = try await startNode("ann", seed: 141)
        let bob = try await startNode("bob", seed: 142)
        let sessions = try await formSession(ann, [bob])
        let atAnn = try await Journal(session: sessions[0]).add(seededBytes(70_000, seed: 3))
        let root = atAnn.handle.store.directory.deletingLastPathComponent()
        #expect(FileManager.default.fileExists(atPath: root.path))
        for node in [ann, bob] { await node.shutdown() }
        #expect(!FileManager.default.fileExists(atPath: root.path))
    }

    @Test(
        "T7: a full disk fails that download with diskFull; messages still flow",
        .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func diskFull() async throws {
        let bobData = temporaryDirectory("tmpfs")
        try run("/bin/mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", bobData.path)
        defer {
            try? run("/bin/umount", bobData.path)
            try? FileManager.default.removeItem(at: bobData)
        }
        let ann = try await startNode("ann", seed: 151)
        let bob = try await startNode("bob", seed: 152, dataDirectory: bobData)
        defer { Task { for node in [ann, bob] { await node.shutdown() } } }
        let sessions = try await formSession(ann, [bob])
        _ = try await Journal(session: sessions[0]).add(seededBytes(3_000_000, seed: 4))
        let atBob = try await attachments(Journal(session: sessions[1]), count: 1, "bob learns of it")[0]
        do {
            _ = try await withTimeout(30, "bob's download fails") { try await atBob.load() }
            Issue.record("3 MB fit on a 1 MiB tmpfs")
        } catch HuddleError.storage(.diskFull(let path)) {
            #expect(path.hasPrefix(bobData.path), "\(path)")
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        if case .failed(.storage(.diskFull)) = atBob.progress.status {
        } else {
            Issue.record("progress is \(atBob.progress)")
        }
        #expect(atBob.progress.verifiedBytes > 0, "verified chunks are kept")
        // The session is unaffected: a message still arrives.
        let bobMessenger = Messenger(session: sessions[1])
        let received = Task {
            for await (stroke, _) in bobMessenger.messages(of: Stroke.self) { return stroke.id }; return -1
        }
        try await Messenger(session: sessions[0]).send(Stroke(id: 42, points: []))
        #expect(try await withTimeout(10, "the message arrives") { await received.value } == 42)
    }
}

/// Runs a program and fails if it exits with another status than 0.
func run(_ program: String, _ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw HuddleError.storage(
            .io(
                operation: "run", path: "\(program) \(arguments.joined(separator: " "))",
                errno: process.terminationStatus))
    }
}

extension AttachmentProgress.Status {
    var isComplete: Bool {
        if case .complete = self { return true }
        return false
    }
}
