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
    /// Joining failed; the payload says why.
    case joinFailed(JoinFailure)
    /// The session's activity is of another kind than the one asked for.
    case activityMismatch(expected: String, found: String)
    /// An encoded message exceeds the 256 KiB limit.
    case messageTooLarge(size: Int, limit: Int)
    /// An unreliable message exceeds what fits in one datagram.
    case datagramTooLarge(size: Int, limit: Int)
    /// The recipient is not an active participant.
    case notAParticipant(Participant)
    /// The session's removal policy does not let this node remove participants (or the session has no charter:
    /// its creator runs an older version).
    case removalNotPermitted(RemovalPolicy?)
    /// ``GroupSession/remove(_:)`` named this node itself; call ``GroupSession/leave()`` instead.
    case cannotRemoveSelf
    /// ``GroupSession/revoke(_:)`` was given an invitation of another session.
    case foreignInvitation
    /// ``GroupSession/admit(_:)`` or ``GroupSession/deny(_:)`` named a request that no longer waits: a member answered
    /// it already, it expired, or it never came.
    case joinRequestNotPending(JoinRequest)
    /// ``GroupSession/makeInvitation(validFor:requiresApproval:uses:)`` was asked for fewer than one use.
    case invalidUseCount(Int)
    /// The receipt was not given by this session's messengers (it belongs to another session).
    case foreignReceipt(MessageReceipt)
    /// A value could not be encoded or decoded; the payload names the type and what the coder said.
    case coding(CodingFailure)
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
    /// This node's own attachments reach what one author may have in the journal (the number of attachments, 128, or
    /// their bytes, 1 GiB, as the bound says); remove some of them first.
    case authorShareFull(Journal.AuthorBound, limit: Int)
    /// Storing or reading an attachment, or reading a file to share, failed: the disk is full
    /// (``StorageError/diskFull(path:)``: verified data is kept; free space and try again), the file is missing or
    /// not a regular file, or a system call failed. The payload names the file.
    case storage(StorageError)
    /// The local network cannot be used for announcing or finding sessions; the payload says why.
    case localNetwork(LocalNetworkFailure)
    /// ``HuddleNode/Configuration/keepaliveInterval`` is outside ``HuddleNode/keepaliveIntervals``.
    case keepaliveIntervalOutOfRange(Duration)
    /// ``HuddleNode/Configuration/shareTurnServers`` is set and the TURN server at `server` has a username or
    /// password longer than a ticket carries (`limit`, ``Invitation/maxTurnCredentialBytes``, UTF-8 bytes).
    case turnCredentialsTooLong(server: NetworkAddress, limit: Int)

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
        case .removalNotPermitted(let policy):
            policy.map { "this participant may not remove others: \($0)" }
                ?? "this session has no removal policy (its creator runs an older version): nobody may remove"
        case .cannotRemoveSelf: "a participant cannot remove itself; leave the session instead"
        case .foreignInvitation: "the invitation is for another session"
        case .invalidUseCount(let uses): "an invitation needs at least one use, not \(uses); pass nil for no limit"
        case .joinRequestNotPending(let request):
            "the request of \(request) no longer waits: it was answered by a member or expired"
        case .foreignReceipt(let receipt):
            "\(receipt) of session \(receipt.session) was not sent in this session"
        case .coding(let failure): "\(failure)"
        case .transport(let error): "network: \(error)"
        case .attachmentTooLarge(let size, let limit):
            "the attachment is \(ByteCountText.describe(Int(clamping: size))); the limit is "
                + ByteCountText.describe(Int(clamping: limit))
        case .attachmentMetadataTooLarge(let size, let limit):
            "the attachment's metadata is \(ByteCountText.describe(size)) encoded; the limit is "
                + ByteCountText.describe(limit)
        case .attachmentRemoved: "the attachment was removed from the journal (or the session ended)"
        case .journalFull(let limit): "the journal already holds \(limit) attachments; remove one first"
        case .authorShareFull(let bound, let limit):
            "this participant's \(bound) would exceed the limit of \(limit); remove some of its attachments first"
        // The store's sentences already say what happened and name the file; a prefix would say it twice.
        case .storage(let error): "\(error)"
        case .localNetwork(let failure): "local network: \(failure)"
        case .keepaliveIntervalOutOfRange(let interval):
            "the keepalive interval must be between 100 ms and 5 s (a connection times out after 15 s of silence), "
                + "not \(interval)"
        case .turnCredentialsTooLong(let server, let limit):
            "the TURN server \(server) cannot be shared in tickets: its username or password is longer than "
                + "\(limit) bytes (turn shareTurnServers off, or give it shorter credentials)"
        }
    }
}

extension HuddleError {
    /// The public error for a store failure.
    init(_ error: StorageError) {
        switch error {
        case .tooLarge(let size, let limit):
            self = .attachmentTooLarge(size: Int(clamping: size), limit: Int(clamping: limit))
        case .diskFull, .unreadable, .notRegularFile, .io: self = .storage(error)
        }
    }

    /// The public error for a failure the journal core reports.
    init(_ error: JournalStoreError) {
        // The node's store is a ``FileChunkStore``, which reports its own errors; anything else would be a failure
        // to write the chunk.
        self = .storage(
            error.underlying as? StorageError ?? .io(operation: "store a chunk in", path: "\(error)", errno: EIO))
    }

    /// The public error for adding or removing an attachment the core refused. (Metadata size is checked before the
    /// core is asked, so the limits `add` can exceed are the journal's and this author's share of it.)
    init(_ error: JournalError) {
        switch error {
        case .attachmentTooLarge(let size, let limit):
            self = .attachmentTooLarge(size: Int(clamping: size), limit: Int(clamping: limit))
        case .limitExceeded(JournalError.attachmentsByOneAuthor, let limit):
            self = .authorShareFull(.attachments, limit: limit)
        case .limitExceeded(JournalError.bytesByOneAuthor, let limit): self = .authorShareFull(.bytes, limit: limit)
        case .limitExceeded(JournalError.journalAttachments, let limit): self = .journalFull(limit: limit)
        case .limitExceeded(_, let limit):
            // Metadata is the only other bound a local add meets, and ``Journal`` checks it before asking the core.
            self = .attachmentMetadataTooLarge(size: limit + 1, limit: limit)
        default:
            // Not the journal's to give: an unknown attachment (removed meanwhile) or, for an add, a manifest whose
            // random identifier collided. Either way the attachment as asked for is not in the journal.
            self = .attachmentRemoved
        }
    }
}
