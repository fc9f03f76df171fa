import HuddleProtocol
import HuddleSession
import NIOConcurrencyHelpers

/// The observable state of one session, shared by its ``GroupSession`` handle and the node's ``SessionEngine``.
final class SessionContext: Sendable {
    /// What joining this session means.
    enum Plan: Sendable {
        /// Start it: this node is its first member.
        case start(SessionMembership)
        /// Join it with a ticket.
        case join(Invitation)
    }

    let id: SessionID
    let activityIdentifier: String
    let local: Participant
    let plan: Plan
    let state = Broadcast<GroupSessionState>(.waiting)
    let participants: Broadcast<Set<Participant>>
    /// The encoded activity (see ``ActivityCoding``), empty until known.
    let activity: Broadcast<[UInt8]>
    /// Active participants nothing has been heard from for a while (``ParticipantChange/unresponsive(_:)``).
    let unresponsive = NIOLockedValueBox<Set<Participant>>([])
    /// Participant changes, in order, for every observer.
    let changes = EventFanOut<ParticipantChange>(bufferLimit: nil)
    /// Moves of participants' connections to other paths, for every observer.
    let paths = EventFanOut<PathChange>(bufferLimit: PathChange.observerBufferLimit)
    /// The session's attachments.
    let journal = JournalContext()
    /// Reliable messages that will not be delivered, from the session's start, for every observer.
    let deliveryFailures = ReportLog<DeliveryFailure>()
    /// The outcome of every reliable message this node sent in the session, by receipt.
    let deliveries = DeliveryLedger()
    /// The active participants other than this node, numbered for receipts; rebuilt on every change of
    /// ``participants`` (``updateParticipants(_:)``), not per message.
    private let others = NIOLockedValueBox(RecipientGroup.empty)
    /// Received messages no application code will see, for every observer.
    let messageDrops = ReportLog<MessageDrop>()
    /// Ask-to-join requests and their answers, from the session's start, for every observer.
    let joinRequests = ReportLog<JoinRequestChange>()
    /// The ask-to-join requests waiting for an answer, oldest first.
    let pendingJoinRequests = NIOLockedValueBox<[JoinRequest]>([])
    /// Called when this joiner's request waits for a member's answer (ask to join).
    let onWaitingForApproval: (@Sendable () -> Void)?

    init(
        id: SessionID, activityIdentifier: String, local: Participant, plan: Plan, activity: [UInt8],
        onWaitingForApproval: (@Sendable () -> Void)? = nil
    ) {
        self.onWaitingForApproval = onWaitingForApproval
        self.id = id
        self.activityIdentifier = activityIdentifier
        self.local = local
        self.plan = plan
        self.participants = Broadcast([local])
        self.activity = Broadcast(activity)
    }

    var isInvalidated: Bool {
        if case .invalidated = state.value { return true }
        return false
    }

    /// Checks that the session is joined and not over, before a handle of it acts. At most one session of a node is
    /// joined and not over at a time (a node begins another only after this one is over), so this also means it is
    /// the node's current session.
    ///
    /// - Throws: ``HuddleError/invalidated(_:)`` with the reason once the session is over (left, ended, the node
    ///   shut down), ``HuddleError/notJoined`` while it is not joined yet.
    func requireJoined() throws(HuddleError) {
        switch state.value {
        case .joined: return
        case .waiting: throw .notJoined
        case .invalidated(let reason): throw .invalidated(reason)
        }
    }

    /// Every active participant other than this node, as a message's recipients.
    var everyoneElse: RecipientGroup { others.withLockedValue { $0 } }

    /// Sets the active participants (and ``everyoneElse``).
    func updateParticipants(_ updated: Set<Participant>) {
        others.withLockedValue { $0 = RecipientGroup(updated.subtracting([local])) }
        participants.update(updated)
    }

    /// Moves to `invalidated(reason)` once and ends every observer stream.
    func invalidate(_ reason: InvalidationReason) {
        guard !isInvalidated else { return }
        state.update(.invalidated(reason: reason))
        state.finish()
        updateParticipants([])
        unresponsive.withLockedValue { $0 = [] }
        participants.finish()
        activity.finish()
        changes.finish()
        paths.finish()
        deliveryFailures.finish()
        messageDrops.finish()
        pendingJoinRequests.withLockedValue { $0 = [] }
        joinRequests.finish()
        journal.finish()
    }
}
