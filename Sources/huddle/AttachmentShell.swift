import Foundation
import Huddle

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The chat's attachment commands (`/share PATH`, `/ls`, `/get ID PATH`, `/rm ID`) and the attachment events:
/// `attachment-added`, `attachment-progress`, `attachment-complete`, `attachment-removed`, `attachment-saved`,
/// `attachment-failed`. Without `--json` on a terminal, downloads show a progress bar on standard error.
///
/// This node's own shares are reported once, by `/share`'s `attachment-shared`: the journal's view of them is not
/// announced again as `attachment-added`.
struct AttachmentShell: Sendable {
    let journal: Journal
    let output: EventOutput
    /// The local participant's id: attachments it authored are not announced as news.
    let localParticipant: String
    /// Whether to draw progress bars (text output on a terminal).
    let drawsProgressBars: Bool

    /// How often progress is reported per attachment, at most.
    static let progressInterval: Duration = .milliseconds(250)

    init(journal: Journal, output: EventOutput, localParticipant: String) {
        self.journal = journal
        self.output = output
        self.localParticipant = localParticipant
        drawsProgressBars = !output.json && isatty(STDERR_FILENO) == 1
    }

    /// Follows the journal: reports additions and removals, and each attachment's progress to completion. Returns
    /// when the session is over.
    func follow() async {
        var known: [UUID: Task<Void, Never>] = [:]
        for await attachments in journal.attachmentUpdates {
            let current = Set(attachments.map(\.id))
            for (id, task) in known where !current.contains(id) {
                task.cancel()
                known[id] = nil
                output.emit("attachment-removed", ["id": .string(Self.text(id))], text: "- removed \(Self.text(id))")
            }
            for attachment in attachments where known[attachment.id] == nil {
                if attachment.authorID != localParticipant { announce(attachment) }
                known[attachment.id] = Task { await track(attachment) }
            }
        }
        for task in known.values { task.cancel() }
    }

    /// Runs one command line if it is an attachment command; returns whether it was.
    func handle(_ text: String) async -> Bool {
        let words = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
        switch words.first {
        case "/share":
            guard words.count >= 2 else {
                output.error(code: "usage", "usage: /share PATH")
                return true
            }
            await share(String(text.dropFirst("/share".count)).trimmingCharacters(in: .whitespaces))
        case "/ls":
            await list()
        case "/get":
            guard words.count == 3 else {
                output.error(code: "usage", "usage: /get ID PATH")
                return true
            }
            get(words[1], to: words[2])
        case "/rm":
            guard words.count == 2 else {
                output.error(code: "usage", "usage: /rm ID")
                return true
            }
            await remove(words[1])
        default:
            return false
        }
        return true
    }

    private func share(_ path: String) async {
        let url = URL(fileURLWithPath: (path as NSString).expandingTildeInPath)
        do {
            let attachment = try await journal.add(
                contentsOf: url, metadata: AttachmentInfo(name: url.lastPathComponent))
            output.emit(
                "attachment-shared", ["id": .string(Self.text(attachment.id)), "size": .integer(attachment.size)],
                text: "shared \(url.lastPathComponent) as \(Self.text(attachment.id))")
        } catch {
            output.error(code: "share-failed", "\(error)")
        }
    }

    private func list() async {
        let attachments = journal.attachments
        for attachment in attachments {
            let holders = (try? await journal.holders(of: attachment)) ?? 0
            let progress = attachment.progress
            output.emit(
                "attachment",
                [
                    "id": .string(Self.text(attachment.id)), "name": .string(Self.name(of: attachment)),
                    "size": .integer(attachment.size), "holders": .integer(holders),
                    "verified": .integer(progress.verifiedBytes), "status": .string(Self.status(progress)),
                ],
                text: "\(Self.text(attachment.id).prefix(8))  \(Self.name(of: attachment))  "
                    + "\(Self.formatted(bytes: attachment.size))  \(holders) holder(s)  "
                    + "\(Int(progress.fraction * 100)) % \(Self.status(progress))")
        }
        output.emit("attachments", ["count": .integer(attachments.count)], text: "\(attachments.count) attachment(s)")
    }

    private func get(_ prefix: String, to path: String) {
        guard let attachment = find(prefix) else { return }
        guard let url = destination(of: attachment, path) else { return }
        Task {
            do {
                try await attachment.save(to: url)
                output.emit(
                    "attachment-saved", ["id": .string(Self.text(attachment.id)), "path": .string(url.path)],
                    text: "saved \(Self.name(of: attachment)) to \(url.path)")
            } catch {
                output.error(code: "get-failed", "\(Self.text(attachment.id)): \(error)")
            }
        }
    }

    /// Where `/get` writes: `path`, or inside it under the attachment's name when it is a directory. An existing file
    /// is never overwritten (an error says so); `nil` after reporting why.
    private func destination(of attachment: Journal.Attachment, _ path: String) -> URL? {
        var url = URL(fileURLWithPath: (path as NSString).expandingTildeInPath)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            // The sharer chose the name: only its last component is used, so it cannot point outside the directory.
            let name = (Self.name(of: attachment) as NSString).lastPathComponent
            url.append(path: ["", ".", ".."].contains(name) ? Self.text(attachment.id) : name)
        }
        guard !FileManager.default.fileExists(atPath: url.path) else {
            output.error(
                code: "get-failed",
                "\(url.path) exists; /get \(Self.text(attachment.id).prefix(8)) with another path, or remove it first")
            return nil
        }
        return url
    }

    private func remove(_ prefix: String) async {
        guard let attachment = find(prefix) else { return }
        do {
            try await journal.remove(attachment)
        } catch {
            output.error(code: "rm-failed", "\(error)")
        }
    }

    /// The attachment whose id starts with `prefix` (ids are printed in full; any unique prefix works).
    private func find(_ prefix: String) -> Journal.Attachment? {
        let matches = journal.attachments.filter { Self.text($0.id).hasPrefix(prefix.lowercased()) }
        guard matches.count == 1, let match = matches.first else {
            output.error(
                code: "unknown-attachment",
                matches.isEmpty ? "no attachment with id \(prefix); /ls lists them" : "\(prefix) is ambiguous")
            return nil
        }
        return match
    }

    private func announce(_ attachment: Journal.Attachment) {
        output.emit(
            "attachment-added",
            [
                "id": .string(Self.text(attachment.id)), "name": .string(Self.name(of: attachment)),
                "size": .integer(attachment.size), "from": .string(attachment.authorID),
                "from_name": attachment.author.map { .string($0.name) } ?? .null,
            ],
            text: "+ \(attachment.author?.name ?? attachment.authorID) shared \(Self.name(of: attachment)) "
                + "(\(Self.formatted(bytes: attachment.size)), id \(Self.text(attachment.id)))")
    }

    private func track(_ attachment: Journal.Attachment) async {
        let clock = ContinuousClock()
        var lastReport = clock.now - Self.progressInterval
        var barDrawn = false
        var reportedVerified = false
        for await progress in attachment.progressUpdates {
            switch progress.status {
            case .fetching, .paused:
                // The first verified bytes are always reported: after a restart they show what was resumed.
                let first = !reportedVerified && progress.verifiedBytes > 0
                guard first || clock.now - lastReport >= Self.progressInterval else { continue }
                lastReport = clock.now
                reportedVerified = reportedVerified || progress.verifiedBytes > 0
                if output.json {
                    output.emit(
                        "attachment-progress",
                        [
                            "id": .string(Self.text(attachment.id)), "verified": .integer(progress.verifiedBytes),
                            "size": .integer(attachment.size),
                        ], text: "")
                } else if drawsProgressBars {
                    drawBar(attachment, progress)
                    barDrawn = true
                }
            case .complete:
                if barDrawn { StandardError.write("\r\u{1B}[2K", newline: false) }
                let digest = (try? await attachment.digest()) ?? ""
                output.emit(
                    "attachment-complete", ["id": .string(Self.text(attachment.id)), "blake2b": .string(digest)],
                    text: "= \(Self.name(of: attachment)) complete (\(Self.formatted(bytes: attachment.size)))")
            case .failed(let error):
                if barDrawn { StandardError.write("\r\u{1B}[2K", newline: false) }
                output.emit(
                    "attachment-failed", ["id": .string(Self.text(attachment.id)), "message": .string("\(error)")],
                    text: "! \(Self.name(of: attachment)): \(error)")
            case .removed:
                if barDrawn { StandardError.write("\r\u{1B}[2K", newline: false) }
            }
            if progress.isFinal { barDrawn = false }
        }
        // Stopped mid-download (Ctrl-C, leaving): end the bar's line so what follows starts on a line of its own.
        if barDrawn { StandardError.write("") }
    }

    private func drawBar(_ attachment: Journal.Attachment, _ progress: AttachmentProgress) {
        let width = 30
        let filled = Int(progress.fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        StandardError.write(
            "\r\u{1B}[2K[\(bar)] \(Int(progress.fraction * 100)) % \(Self.name(of: attachment))"
                + (progress.isPaused ? " (paused)" : ""), newline: false)
    }

    static func text(_ id: UUID) -> String { id.uuidString.lowercased() }

    static func name(of attachment: Journal.Attachment) -> String {
        (try? attachment.loadMetadata(of: AttachmentInfo.self).name) ?? "unnamed"
    }

    static func status(_ progress: AttachmentProgress) -> String {
        switch progress.status {
        case .fetching: "fetching"
        case .paused: "paused"
        case .complete: "complete"
        case .failed: "failed"
        case .removed: "removed"
        }
    }

    static func formatted(bytes: Int) -> String {
        if bytes >= 1 << 20 { return String(format: "%.1f MiB", Double(bytes) / Double(1 << 20)) }
        if bytes >= 1 << 10 { return String(format: "%.1f KiB", Double(bytes) / Double(1 << 10)) }
        return "\(bytes) B"
    }
}

extension AttachmentProgress {
    fileprivate var isPaused: Bool {
        if case .paused = status { return true }
        return false
    }
}
