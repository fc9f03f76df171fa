import HuddleProtocol
import NIOConcurrencyHelpers

/// One session of an activity, shared by its members over a full mesh of end-to-end encrypted connections: the
/// counterpart of Apple's `GroupSession`.
///
/// Get one from ``HuddleNode/activate(_:)`` (a new session, ``GroupSessionState/waiting`` until ``join()``) or
/// ``HuddleNode/join(_:as:)`` (an existing one, already joined); ``HuddleNode/sessions(of:)`` yields both.
/// Watch ``participantUpdates`` to send catch-up state to newcomers with
/// ``Messenger/send(_:to:)-(Encodable&Sendable,_)`` and `.only([newcomer])`.
public final class GroupSession<Activity: GroupActivity>: Sendable, Identifiable {
    /// The session's state type.
    public typealias State = GroupSessionState

    let context: SessionContext
    let engine: SessionEngine
    private let lastActivity: NIOLockedValueBox<Activity>

    init(context: SessionContext, engine: SessionEngine, activity: Activity) {
        self.context = context
        self.engine = engine
        self.lastActivity = NIOLockedValueBox(activity)
    }

    /// The session's identifier (the same on every member).
    public var id: SessionID { context.id }

    /// This node as a participant.
    public var localParticipant: Participant { context.local }

    /// The current state.
    public var state: State { context.state.value }

    /// The current state, then every change; ends after ``GroupSessionState/invalidated(reason:)``.
    public var states: AsyncStream<State> { context.state.stream() }

    /// The participants currently active, this node included while joined: every member of the roster that has not
    /// left or become unreachable, whether or not the connection to it is up yet (messages to it wait for the
    /// connection). A newcomer is active from the moment this node learns of it, so a message sent right after its
    /// `.joined` change reaches it.
    public var activeParticipants: Set<Participant> { context.participants.value }

    /// The active participants now, then after every change (a participant joined, left, or became unreachable).
    /// Observers that fall behind get the latest set.
    public var participantUpdates: AsyncStream<Set<Participant>> { context.participants.stream() }

    /// Every change to the active participants, with its reason, from now on (each observer buffers up to 1024).
    public var participantChanges: AsyncStream<ParticipantChange> { context.changes.stream() }

    /// Every report of reliable messenger messages that will not be delivered to a participant (it left, became
    /// unreachable or restarted, or the session ended first), from now on (each observer buffers up to 1024
    /// reports). Together with delivery this accounts for every message a reliable ``Messenger`` accepted: nothing
    /// is lost silently.
    public var deliveryFailures: AsyncStream<DeliveryFailure> { context.deliveryFailures.stream() }

    /// Round-trip time and loss for every other active participant.
    public func peerStatistics() async throws -> [PeerStatistics] {
        try await engine.peerStatistics()
    }

    /// The activity every member agrees on. Setting it changes it for everyone (as ``setActivity(_:)``, without
    /// waiting); when members change it at the same time, every member ends up with the same one of the changes.
    public var activity: Activity {
        get {
            if let decoded = try? ActivityCoding.decode(context.activity.value, as: Activity.self) {
                lastActivity.withLockedValue { $0 = decoded }
                return decoded
            }
            return lastActivity.withLockedValue { $0 }
        }
        set {
            Task { try? await setActivity(newValue) }
        }
    }

    /// The activity now, then after every change.
    public var activities: AsyncStream<Activity> {
        let payloads = context.activity.stream()
        return AsyncStream { continuation in
            let task = Task {
                for await payload in payloads {
                    if let activity = try? ActivityCoding.decode(payload, as: Activity.self) {
                        continuation.yield(activity)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Changes the activity for everyone.
    ///
    /// - Throws: ``HuddleError/notJoined`` before ``join()`` or after the session ended.
    public func setActivity(_ activity: Activity) async throws {
        let payload = try ActivityCoding.encode(activity)
        try await engine.setActivity(payload)
    }

    /// Joins the session: for a session from ``HuddleNode/activate(_:)`` this starts it; a session from
    /// ``HuddleNode/join(_:as:)`` is already joined and this returns at once.
    ///
    /// - Throws: ``HuddleError/alreadyInSession`` if the node is in another session,
    ///   ``HuddleError/invalidated(_:)`` if this session is over.
    public func join() async throws {
        switch state {
        case .joined: return
        case .invalidated(let reason): throw HuddleError.invalidated(reason)
        case .waiting: try await engine.begin(context)
        }
    }

    /// Leaves the session: the others see this participant leave; the session goes on without it. Waits up to
    /// 2 s for the announcement to be acknowledged.
    public func leave() async {
        await engine.leave()
    }

    /// Ends the session for every member.
    ///
    /// - Throws: ``HuddleError/notJoined`` unless joined.
    public func end() async throws {
        try await engine.end()
    }

    /// A ticket that lets one more device join, valid for `duration`. Any member may invite; the ticket names the
    /// current members, so it keeps working after this node leaves.
    ///
    /// - Throws: ``HuddleError/notJoined`` unless joined.
    public func makeInvitation(validFor duration: Duration = .seconds(24 * 3600)) async throws -> Invitation {
        try await engine.makeInvitation(validFor: duration)
    }
}
