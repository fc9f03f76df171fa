import HuddleProtocol

/// Why a journal message from an authenticated peer was refused, or a local journal operation failed. For a peer's
/// message the caller closes that connection with `CloseCode.protocolViolation` and this reason; other peers and
/// transfers are unaffected.
public enum JournalError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The bytes do not decode as a journal message.
    case malformed(String)
    /// A field or a count exceeds its limit.
    case limitExceeded(what: String, limit: Int)
    /// A manifest claims more than ``ProtocolLimits/maxAttachmentSize`` bytes.
    case attachmentTooLarge(size: UInt64, limit: UInt64)
    /// A manifest's signature does not verify.
    case badManifest
    /// Two manifests with the same id and different contents.
    case conflictingManifest
    /// A chunk or leaf index outside the attachment.
    case indexOutOfRange(index: UInt64, count: Int)
    /// A local operation on an attachment the journal does not know.
    case unknownAttachment

    public var description: String {
        switch self {
        case .malformed(let detail): "malformed journal message: \(detail)"
        case .limitExceeded(let what, let limit): "\(what) exceeds the limit of \(limit)"
        case .attachmentTooLarge(let size, let limit): "attachment of \(size) bytes exceeds the limit of \(limit)"
        case .badManifest: "the manifest's signature does not verify"
        case .conflictingManifest: "a different manifest with the same attachment id"
        case .indexOutOfRange(let index, let count): "index \(index) outside an attachment of \(count) chunks"
        case .unknownAttachment: "unknown attachment"
        }
    }
}

extension JournalError {
    /// The `what` of ``limitExceeded(what:limit:)`` when a local add meets ``ProtocolLimits/maxJournalAttachments``.
    public static let journalAttachments = "journal attachments"
    /// ... ``ProtocolLimits/maxJournalAttachmentsPerAuthor``.
    public static let attachmentsByOneAuthor = "attachments by one author"
    /// ... ``ProtocolLimits/maxJournalBytesPerAuthor``.
    public static let bytesByOneAuthor = "bytes of attachments by one author"
}
