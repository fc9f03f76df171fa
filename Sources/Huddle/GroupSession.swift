import HuddleProtocol
import HuddleSession
import HuddleTransport
import Logging
import NIOConcurrencyHelpers

/// One session of an activity, shared by its members over a full mesh of end-to-end encrypted connections: the
/// counterpart of Apple's `GroupSession`.
///
/// Get one from ``HuddleNode/activate(_:removalPolicy:)`` (a new session, ``GroupSessionState/waiting`` until ``join()``) or
/// ``HuddleNode/join(_:as:onWaitingForApproval:)`` (an existing one, already joined); ``HuddleNode/sessions(of:)`` yields both.
/// Watch ``participantChanges`` (`.joined(newcomer)`) to send catch-up state to newcomers with
/// ``Messenger/send(_:to:)-(Message,_)`` and `.only([newcomer])`.
public final class GroupSession<Activity: GroupActivity>: Sendable, Identifiable {
    /// The session's state type.
    public typealias State = GroupSessionState

    let context: SessionContext
    let engine: SessionEngine
    private let lastActivity: NIOLockedValueBox<Activity>
    /// Activities set through the ``activity`` property, applied one after another by one task so that the last
    /// assignment wins everywhere (separate tasks could apply them in any order).
    private let pendingActivities: AsyncStream<Activity>.Continuation
    /// Failures of activities set through the ``activity`` property.
    private let activityFailures = EventFanOut<HuddleError>(bufferLimit: 64)

    init(context: SessionContext, engine: SessionEngine, activity: Activity) {
        self.context = context
        self.engine = engine
        self.lastActivity = NIOLockedValueBox(activity)
        let (pending, continuation) = AsyncStream<Activity>.makeStream()
        self.pendingActivities = continuation
        let failures = activityFailures
        // Captures the engine and the failure fan-out, not `self`, so the task does not keep the session alive; it
        // ends when the session is deinitialised (the continuation finishes).
        Task {
            for await activity in pending {
                do throws(HuddleError) {
                    try await Self.apply(activity, engine: engine, context: context)
                } catch {
                    engine.logger.warning(
                        "setting the activity failed", metadata: ["session": "\(context.id)", "error": "\(error)"])
                    failures.yield(error)
                }
            }
            failures.finish()
        }
    }

    deinit {
        pendingActivities.finish()
    }

    /// The session's identifier (the same on every member).
    public var id: SessionID { context.id }

    /// This node as a participant.
    public var localParticipant: Participant { context.local }

    /// Whether this node started the session: `true` for a session from ``HuddleNode/activate(_:removalPolicy:)``, `false` for one
    /// joined with an invitation (Apple's `GroupSession.isLocallyInitiated`).
    public var isLocallyInitiated: Bool {
        if case .start = context.plan { return true }
        return false
    }

    /// The current state.
    public var state: State { context.state.value }

    /// The current state, then every change; ends after ``GroupSessionState/invalidated(reason:)``.
    public var stateUpdates: AsyncStream<State> { context.state.stream() }

    /// The earlier name of ``stateUpdates``.
    @available(*, deprecated, renamed: "stateUpdates")
    public var states: AsyncStream<State> { stateUpdates }

    /// The participants currently active, this node included while joined: every member of the roster that has not
    /// left or become unreachable, whether or not the connection to it is up yet (messages to it wait for the
    /// connection). A newcomer is active from the moment this node learns of it, so a message sent right after its
    /// `.joined` change reaches it.
    public var activeParticipants: Set<Participant> { context.participants.value }

    /// The active participants nothing has been heard from for about 2 seconds, with the default keepalive (see
    /// ``ParticipantChange/unresponsive(_:)``): still active, perhaps about to be reported unreachable.
    public var unresponsiveParticipants: Set<Participant> { context.unresponsive.withLockedValue { $0 } }

    /// The active participants now, then after every change (a participant joined, left, or became unreachable).
    /// Observers that fall behind get the latest set.
    public var participantUpdates: AsyncStream<Set<Participant>> { context.participants.stream() }

    /// Every change to the active participants, with its reason, from now on, in order; none is dropped (an
    /// observer's buffer grows until it reads).
    public var participantChanges: AsyncStream<ParticipantChange> { context.changes.stream() }

    /// Every move of a participant's connection to another path (relayed to direct after hole punching, direct to
    /// relayed, a new address), from now on; the path each connection starts on is in ``peerStatistics()``. An
    /// observer that does not read keeps the newest ``PathChange/observerBufferLimit`` changes. Ends when the session
    /// is over.
    public var pathChanges: AsyncStream<PathChange> { context.paths.stream() }

    /// Every report of reliable messenger messages that will not be delivered to a participant (it left, became
    /// unreachable or restarted, or the session ended first): those since the session began, then each new one;
    /// none is dropped, however late or slowly an observer reads. Each names its messages' receipts
    /// (``DeliveryFailure/receipts``). Together with delivery this accounts for every message a reliable
    /// ``Messenger`` accepted: nothing is lost silently.
    public var deliveryFailures: AsyncStream<DeliveryFailure> { context.deliveryFailures.stream() }

    /// Every report of messages other participants sent this node that arrived but that no application code will see
    /// (nobody subscribed to their type, or they could not be decoded): those since the session began, then each new
    /// one, none dropped (consecutive drops of one kind are reported together).
    public var messageDrops: AsyncStream<MessageDrop> { context.messageDrops.stream() }

    /// Round-trip time, loss and path for every other active participant this node has an established connection
    /// to. A participant whose connection is still being set up (its handshake has not completed) is left out: it
    /// has no path yet, and listing it at the address being dialled would call a path that may never work direct.
    public func peerStatistics() async throws(HuddleError) -> [PeerStatistics] {
        let participants = context.participants.value
        let others = participants.subtracting([context.local])
        return try await engine.perform(in: context) { _, endpoint, _ in
            others.compactMap { PeerStatistics(of: $0, among: participants, on: endpoint) }
        }
    }

    /// The activity every member agrees on. Setting it changes it for everyone (as ``setActivity(_:)``, without
    /// waiting); when members change it at the same time, every member ends up with the same one of the changes.
    ///
    /// Setting is fire-and-forget, as in GroupActivities: assignments are applied in order, and one that fails (the
    /// session is not joined yet or is over, the activity does not encode) is logged as a warning and reported on
    /// ``activityErrors``. Call ``setActivity(_:)`` to wait for the change and get its error.
    public var activity: Activity {
        get {
            if let decoded = try? ActivityCoding.decode(context.activity.value, as: Activity.self) {
                lastActivity.withLockedValue { $0 = decoded }
                return decoded
            }
            return lastActivity.withLockedValue { $0 }
        }
        set {
            pendingActivities.yield(newValue)
        }
    }

    /// Failures of activities set through the ``activity`` property, from now on (each observer buffers up to
    /// 64). ``setActivity(_:)`` throws its failures instead.
    public var activityErrors: AsyncStream<HuddleError> { activityFailures.stream() }

    /// The earlier name of ``activityUpdates``.
    @available(*, deprecated, renamed: "activityUpdates")
    public var activities: AsyncStream<Activity> { activityUpdates }

    /// The activity now, then after every change.
    public var activityUpdates: AsyncStream<Activity> {
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

    /// Changes the activity for everyone; returns once the change is applied locally and sent.
    ///
    /// - Throws: ``HuddleError/notJoined`` before ``join()``, ``HuddleError/invalidated(_:)`` once this session is
    ///   over (also after the node moved on to another session: a handle acts on its own session only),
    ///   ``HuddleError/coding(_:)``
    ///   when the activity does not encode, ``HuddleError/transport(_:)`` when the node is shut down.
    public func setActivity(_ activity: Activity) async throws(HuddleError) {
        try await Self.apply(activity, engine: engine, context: context)
    }

    private static func apply(
        _ activity: Activity, engine: SessionEngine, context: SessionContext
    ) async throws(HuddleError) {
        let payload = try ActivityCoding.encode(activity)
        try await engine.perform(in: context) { machine, endpoint, now in
            machine.update(&endpoint, now: now) { $0.setActivity(payload) }
        }
    }

    /// Joins the session: for a session from ``HuddleNode/activate(_:removalPolicy:)`` this starts it; a session from
    /// ``HuddleNode/join(_:as:onWaitingForApproval:)`` is already joined and this returns at once.
    ///
    /// - Throws: ``HuddleError/alreadyInSession`` if the node is in another session,
    ///   ``HuddleError/invalidated(_:)`` if this session is over.
    public func join() async throws(HuddleError) {
        switch state {
        case .joined: return
        case .invalidated(let reason): throw .invalidated(reason)
        case .waiting: try await engine.begin(context)
        }
    }

    /// Leaves the session: the others see this participant leave; the session goes on without it, and its admission
    /// moves to a new key this node never learns, so what it keeps lets it back in only as anyone: with a ticket it
    /// holds. Waits up to 2 s for the announcement to be acknowledged. Does nothing once this session is over,
    /// whatever session the node is in now.
    public func leave() async {
        await engine.leave(context)
    }

    /// Ends the session for every member.
    ///
    /// - Throws: ``HuddleError/notJoined`` before ``join()``, ``HuddleError/invalidated(_:)`` once this session is
    ///   over.
    public func end() async throws(HuddleError) {
        try await engine.end(context)
    }
}
