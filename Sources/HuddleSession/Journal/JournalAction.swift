import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// What a ``JournalState`` asks its driver to do, in order. Store actions go to the driver's
/// ``JournalChunkStore``; the driver answers reads and scans with ``JournalState/chunkRead(_:index:bytes:for:now:verified:)``,
/// ``JournalState/storedChunk(_:index:bytes:)`` (or ``JournalState/storedVerifiedChunks(_:indices:)``) and
/// ``JournalState/storeScanned(_:now:)``. ``JournalCore`` does this itself (``JournalChunkStore/apply(_:verifier:)``),
/// at once or, deferred, through ``JournalStoreCompletion``s.
public enum JournalAction: Sendable {
    /// Send `bytes` (an encoded ``JournalMessage``) reliably on `channel` to `peer`.
    case send([UInt8], channel: ChannelID, to: X25519PublicKey)
    /// Store a verified chunk.
    case writeChunk(AttachmentID, index: Int, bytes: [UInt8])
    /// Read chunk `index` to serve `peer`; answer with ``JournalState/chunkRead(_:index:bytes:for:now:)``.
    case readChunk(AttachmentID, index: Int, for: X25519PublicKey)
    /// Report every chunk the store already holds for this attachment with ``JournalState/storedChunk(_:index:bytes:)``
    /// (each is verified against its leaf), then call ``JournalState/storeScanned(_:now:)``. This is how a restarted
    /// node resumes: it fetches only what is missing or fails verification.
    case scanStore(AttachmentID)
    /// Delete everything stored for an attachment (it was removed).
    case deleteAttachment(AttachmentID)
    /// Tell the application.
    case event(JournalEvent)
}
