import Foundation
import HuddleProtocol
import HuddleSession
import NIOConcurrencyHelpers

/// What an ``Journal/Attachment`` value refers to: its stored bytes and its progress. Shared by every copy of the value,
/// and holding nothing that refers back to the journal, so attachments kept by the application keep no session
/// state alive.
final class AttachmentHandle: Sendable {
    let id: AttachmentID
    let size: UInt64
    let store: FileChunkStore
    let progress: Broadcast<AttachmentProgress>
    private let removedFlag = NIOLockedValueBox(false)

    init(id: AttachmentID, size: UInt64, store: FileChunkStore) {
        self.id = id
        self.size = size
        self.store = store
        progress = Broadcast(AttachmentProgress(verifiedBytes: 0, size: size, status: .fetching))
    }

    /// Whether the attachment was removed (or the session ended): its files are gone even if it was complete.
    var isRemoved: Bool { removedFlag.withLockedValue { $0 } }

    /// Marks the attachment removed; a download still running ends with ``AttachmentProgress/Status/removed``.
    func markRemoved() {
        removedFlag.withLockedValue { $0 = true }
        update(AttachmentProgress(verifiedBytes: UInt64(progress.value.verifiedBytes), size: size, status: .removed))
    }

    /// Publishes new progress; a final status ends the stream.
    func update(_ progress: AttachmentProgress) {
        guard !self.progress.value.isFinal else { return }
        self.progress.update(progress)
        if progress.isFinal { self.progress.finish() }
    }

    /// Returns once every byte is verified; throws if the attachment fails, is removed, or the session ends first.
    func waitUntilComplete() async throws(HuddleError) {
        for await progress in progress.stream() {
            switch progress.status {
            case .complete:
                guard !isRemoved else { throw .attachmentRemoved }
                return
            case .failed(let error): throw error
            case .removed: throw .attachmentRemoved
            case .fetching, .paused: continue
            }
        }
        throw .attachmentRemoved
    }
}
