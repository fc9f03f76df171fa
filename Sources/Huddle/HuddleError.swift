import Foundation
import HuddleProtocol
import HuddleSession
import HuddleTransport

/// What can go wrong using Huddle's public API. Each case's description says what happened and what to do.
public enum HuddleError: Error, Sendable, CustomStringConvertible {
    /// The node already takes part in a session (one session per node; run another node for a second one).
    case alreadyInSession
    /// The operation needs a joined session.
    case notJoined
    /// The session is over; the reason says why.
    case invalidated(InvalidationReason)
    /// The ticket expired at the given date.
    case invitationExpired(Date)
    /// No member named in the ticket answered within the join timeout.
    case joinTimedOut(Duration)
    /// Every member the ticket names is this node itself (the same identity): a node cannot join its own session.
    /// Usually two processes share one identity file; give the joiner an identity of its own.
    case invitationNamesOnlyThisNode(fingerprint: String)
    /// Joining failed for the given reason.
    case joinFailed(String)
    /// The session's activity is of another kind than the one asked for.
    case activityMismatch(expected: String, found: String)
    /// An encoded message exceeds the 256 KiB limit.
    case messageTooLarge(size: Int, limit: Int)
    /// An unreliable message exceeds what fits in one datagram.
    case datagramTooLarge(size: Int, limit: Int)
    /// The recipient is not an active participant.
    case notAParticipant(Participant)
    /// The receipt was not given by this session's messengers (it belongs to another session).
    case foreignReceipt(MessageReceipt)
    /// A value could not be encoded or decoded.
    case coding(String)
    /// The identity file could not be used.
    case identity(String)
    /// The network layer failed.
    case transport(TransportError)
    /// An attachment is larger than ``Journal/maxAttachmentSize``; nothing was stored or sent.
    case attachmentTooLarge(size: Int, limit: Int)
    /// An attachment's encoded metadata is larger than ``Journal/maxMetadataSize``.
    case attachmentMetadataTooLarge(size: Int, limit: Int)
    /// The attachment was removed from the journal, or the session ended, before it could be used.
    case attachmentRemoved
    /// The journal holds as many attachments as it may (``Journal/maxAttachments``); remove one first.
    case journalFull(limit: Int)
    /// This node's own attachments reach what one author may have in the journal (`what`: the number of attachments,
    /// 128, or their bytes, 1 GiB); remove some of them first.
    case authorShareFull(what: String, limit: Int)
    /// The disk is full. The detail is the whole sentence (it says the disk is full and names the file). Verified
    /// data is kept; free space and try again.
    case diskFull(String)
    /// A file to share could not be read (missing, not a regular file, no permission). The detail is the whole
    /// sentence, naming the file.
    case fileUnreadable(String)
    /// Storing or reading an attachment failed for another reason, described.
    case storage(String)
    /// The local network cannot be used for announcing or finding sessions (the node listens on loopback only, no
    /// interface supports multicast, or the discovery port cannot be opened); the text says which.
    case localNetwork(String)

    public var description: String {
        switch self {
        case .alreadyInSession:
            "this node already takes part in a session; leave it first, or start another node"
        case .notJoined: "the session is not joined yet; call join() first"
        case .invalidated(let reason): "the session is over: \(reason)"
        case .invitationExpired(let date): "the invitation expired at \(date); ask a member for a new one"
        case .joinTimedOut(let timeout):
            "no member named in the invitation answered within \(timeout); check the addresses and that a member runs"
        case .invitationNamesOnlyThisNode(let fingerprint):
            "the ticket names only this node's own identity (\(fingerprint.prefix(9))); a node cannot join itself: "
                + "join with another identity"
        case .joinFailed(let reason): "joining failed: \(reason)"
        case .activityMismatch(let expected, let found):
            "the session's activity is \"\(found)\", not \"\(expected)\""
        case .messageTooLarge(let size, let limit):
            "the message is \(ByteCountText.describe(size)); the limit is \(ByteCountText.describe(limit)) "
                + "(send large data with the journal)"
        case .datagramTooLarge(let size, let limit):
            "an unreliable message of \(size) bytes does not fit one datagram (limit \(limit)); use .reliable"
        case .notAParticipant(let participant): "\(participant) is not an active participant"
        case .foreignReceipt(let receipt):
            "\(receipt) of session \(receipt.session) was not sent in this session"
        case .coding(let detail): "encoding failed: \(detail)"
        case .identity(let detail): "identity: \(detail)"
        case .transport(let error): "network: \(error)"
        case .attachmentTooLarge(let size, let limit):
            "the attachment is \(ByteCountText.describe(Int(clamping: size))); the limit is "
                + ByteCountText.describe(Int(clamping: limit))
        case .attachmentMetadataTooLarge(let size, let limit):
            "the attachment's metadata is \(ByteCountText.describe(size)) encoded; the limit is "
                + ByteCountText.describe(limit)
        case .attachmentRemoved: "the attachment was removed from the journal (or the session ended)"
        case .journalFull(let limit): "the journal already holds \(limit) attachments; remove one first"
        case .authorShareFull(let what, let limit):
            "this participant's \(what) would exceed the limit of \(limit); remove some of its attachments first"
        // The store's sentences already say what happened and name the file; a prefix would say it twice.
        case .diskFull(let detail): detail
        case .fileUnreadable(let detail): detail
        case .storage(let detail): "storage: \(detail)"
        case .localNetwork(let detail): "local network: \(detail)"
        }
    }
}

extension HuddleError {
    /// The public error for a store failure.
    init(_ error: FileChunkStoreError) {
        switch error {
        case .diskFull: self = .diskFull(error.description)
        case .tooLarge(let size, let limit):
            self = .attachmentTooLarge(size: Int(clamping: size), limit: Int(clamping: limit))
        case .unreadable, .notRegularFile: self = .fileUnreadable(error.description)
        case .io: self = .storage(error.description)
        }
    }

    /// The public error for a failure the journal core reports.
    init(_ error: JournalStoreError) {
        switch error {
        case .outOfSpace(let detail): self = .diskFull(detail)
        case .failed(let detail): self = .storage(detail)
        }
    }

    /// The public error for adding or removing an attachment the core refused. (Metadata size is checked before the
    /// core is asked, so the limits `add` can exceed are the journal's and this author's share of it.)
    init(_ error: JournalError) {
        switch error {
        case .attachmentTooLarge(let size, let limit):
            self = .attachmentTooLarge(size: Int(clamping: size), limit: Int(clamping: limit))
        case .limitExceeded(let what, let limit) where what != JournalError.journalAttachments:
            self = .authorShareFull(what: what, limit: limit)
        case .limitExceeded(_, let limit): self = .journalFull(limit: limit)
        case .unknownAttachment: self = .attachmentRemoved
        default: self = .storage(error.description)
        }
    }
}
