import HuddleProtocol

/// What a ``JournalState`` tells the application about attachments.
public enum JournalEvent: Sendable, Equatable {
    /// An attachment joined the journal (added locally or announced by a peer).
    case added(AttachmentManifest)
    /// An attachment was removed (locally or by a peer); its chunks are deleted.
    case removed(AttachmentID)
    /// More of an attachment is verified and stored: `verifiedBytes` of its size.
    case progress(AttachmentID, verifiedBytes: UInt64)
    /// Every chunk of an attachment is verified and stored.
    case completed(AttachmentID)
    /// A download stopped (the store failed); verified chunks are kept.
    case failed(AttachmentID, JournalStoreError)
    /// A download verified nothing for ``ProtocolLimits/downloadStallTimeout`` while others waited: it went to the
    /// back of the queue with its verified chunks kept, and resumes when its turn comes again.
    case paused(AttachmentID)
}

extension JournalEvent {
    /// The attachment the event is about.
    public var attachmentID: AttachmentID {
        switch self {
        case .added(let manifest): manifest.id
        case .removed(let id), .progress(let id, _), .completed(let id), .failed(let id, _), .paused(let id): id
        }
    }
}
