import HuddleCrypto
import HuddleProtocol

/// What a driver that applies a ``JournalCore``'s store actions itself (``JournalCore/defersStoreActions``) reports
/// back for each action it took with ``JournalCore/pollStoreAction()``, in the order it took them
/// (``JournalCore/complete(_:endpoint:now:)``).
public enum JournalStoreCompletion: Sendable {
    /// A ``JournalAction/writeChunk(_:index:bytes:)`` is done; `failure` when the store could not write.
    case written(AttachmentID, index: Int, failure: JournalStoreError?)
    /// A ``JournalAction/readChunk(_:index:for:)`` is done: the chunk, or `nil` when the store does not have it or
    /// it failed ``ChunkVerifier/verify(_:index:)``.
    case read(AttachmentID, index: Int, bytes: [UInt8]?, for: X25519PublicKey)
    /// A ``JournalAction/scanStore(_:)`` is done: the chunks stored that passed ``ChunkVerifier/verify(_:index:)``.
    case scanned(AttachmentID, verified: [Int])
    /// A ``JournalAction/deleteAttachment(_:)`` is done.
    case deleted(AttachmentID)
    /// A ``JournalAction/event(_:)`` that waited behind store actions (an attachment reported complete only once its
    /// chunks are written) reached the end of the line.
    case event(JournalEvent)
}

extension JournalStoreCompletion {
    /// The attachment the completed action was about.
    var attachmentID: AttachmentID {
        switch self {
        case .written(let id, _, _), .read(let id, _, _, _), .scanned(let id, _), .deleted(let id): id
        case .event(let event): event.attachmentID
        }
    }
}
