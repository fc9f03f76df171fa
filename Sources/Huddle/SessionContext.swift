import HuddleProtocol
import HuddleSession

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
    /// Participant changes, in order, for every observer.
    let changes = EventFanOut<ParticipantChange>(bufferLimit: 1024)
    /// The session's attachments.
    let journal = JournalContext()
    /// Reliable messages that will not be delivered, for every observer.
    let deliveryFailures = EventFanOut<DeliveryFailure>(bufferLimit: 1024)
    /// Received messages no application code will see, for every observer.
    let messageDrops = EventFanOut<MessageDrop>(bufferLimit: 1024)

    init(id: SessionID, activityIdentifier: String, local: Participant, plan: Plan, activity: [UInt8]) {
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

    /// Moves to `invalidated(reason)` once and ends every observer stream.
    func invalidate(_ reason: InvalidationReason) {
        guard !isInvalidated else { return }
        state.update(.invalidated(reason: reason))
        state.finish()
        participants.update([])
        participants.finish()
        activity.finish()
        changes.finish()
        deliveryFailures.finish()
        messageDrops.finish()
        journal.finish()
    }
}
