import DequeModule
import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// A node's whole session, sans-IO: membership (``SessionCore``) and the journal (``JournalCore``) composed over the
/// node's ``Endpoint``, with every timer of the session as a deadline of this one type.
///
/// This is the only composition of the session cores. The production engine drives it on the transport's event loop
/// and every simulator node drives it in virtual time, so a seed explores exactly the code that ships, its timers
/// included: the redial and join-retry schedules, the journal's request timeouts and HAVE batches, invitation expiry,
/// and the three waits a shell would otherwise keep on a wall clock (the join timeout, the departure flush and the
/// wait for a subscriber; ``SessionTiming``).
///
/// The owner holds the endpoint and passes it in with every call, like ``SessionCore`` and ``JournalCore``: the
/// engine's endpoint lives in the transport driver, a simulated node's beside the machine. Inputs are
/// ``start(_:endpoint:now:)``, ``handle(_:endpoint:now:)``, ``handleTimeout(endpoint:now:)``, the local operations
/// and ``complete(_:endpoint:now:)``; outputs are ``pollEvent()``, ``pollJournalEvent()``, ``pollStoreAction()`` and
/// what the endpoint transmits. Each input is processed to the end before it returns: session events pass through the
/// journal (which keeps its own messages to itself) into the event queue, so no output waits for a later call.
public struct SessionMachine<Store: JournalChunkStore> {
    /// Membership, `nil` until ``start(_:endpoint:now:)``.
    public private(set) var session: SessionCore?
    /// The journal. Its ``JournalCore/store`` is the owner's to read; with deferred store actions the owner applies
    /// them (``pollStoreAction()``) and hands the results back (``complete(_:endpoint:now:)``).
    public var journal: JournalCore<Store>
    /// How long the session's waits last.
    public let timing: SessionTiming
    /// Wall-clock seconds since 1970 at ``Instant/zero`` of the owner's clock: invitations expire at wall-clock times
    /// (they are shared with other members), and this turns those into instants without reading a clock.
    public var wallClockAtZero: Double

    /// Session events for the application, in order (journal messages excluded).
    var events = Deque<SessionEvent>()
    /// When the session core's pending schedules get set up (see ``SessionTiming/schedulingDelay``).
    var schedulingCheckAt: Instant?
    /// When joining gives up, while the membership is joining.
    var joinDeadline: Instant?
    /// How long joining waits in all: ``SessionTiming/joinTimeout``, plus ``ProtocolLimits/joinApprovalTimeout`` once
    /// the sponsor said the request waits for a member's answer.
    var joinWait: Duration = .zero
    /// When the wait for the departure announcement's acknowledgements ends, while departing.
    var departureDeadline: Instant?
    /// When the wait for a subscriber ends, while the owner holds input back for one.
    var subscriberDeadline: Instant?
    /// Whether the session relays for its other members and registers with members as relays (PROTOCOL.md section
    /// 10.3); read when the session starts.
    public var relaysForMembers = true

    /// A machine whose journal keeps chunks in `store` (deferring store actions to the owner when
    /// `defersStoreActions`); the session starts with ``start(_:endpoint:now:)``.
    public init(
        local: X25519PublicKey, store: Store, defersStoreActions: Bool = false, timing: SessionTiming = SessionTiming(),
        wallClockAtZero: Double = 0
    ) {
        journal = JournalCore(local: local, store: store, defersStoreActions: defersStoreActions)
        self.timing = timing
        self.wallClockAtZero = wallClockAtZero
    }

    // MARK: - Inputs

    /// Starts (or joins) the session `membership` describes and applies its first actions (a joiner's connects). A
    /// joiner that is not welcomed within ``SessionTiming/joinTimeout`` gets ``SessionEvent/joinTimedOut(after:)``.
    public mutating func start(_ membership: SessionMembership, endpoint: inout Endpoint, now: Instant) {
        session = SessionCore(membership: membership, relaysForMembers: relaysForMembers)
        session!.flush(&endpoint, now: now)
        if membership.phase == .joining {
            joinWait = timing.joinTimeout
            joinDeadline = now + joinWait
        }
        settle(&endpoint, now: now)
    }

    /// Feeds one endpoint event through membership and journal. Without a session the event is dropped: nothing
    /// could use it.
    public mutating func handle(_ event: EndpointEvent, endpoint: inout Endpoint, now: Instant) {
        guard session != nil else { return }
        session!.handle(event, endpoint: &endpoint, now: now)
        settle(&endpoint, now: now)
    }

    /// Runs every timer that is due at `now`: the journal's, invitation expiry, the session core's redials and join
    /// retries, and the three waits.
    public mutating func handleTimeout(endpoint: inout Endpoint, now: Instant) {
        if let deadline = journal.nextDeadline, deadline <= now {
            journal.handleTimeout(endpoint: &endpoint, now: now)
        }
        guard session != nil else { return }
        let expired = session!.membership.expiredInvitations(at: UInt64(max(0, wallClock(at: now))))
        if !expired.isEmpty {
            session!.update(&endpoint, now: now) { membership in
                for id in expired { membership.closeInvitation(id) }
            }
        }
        let scheduling = schedulingCheckAt.map { $0 <= now } ?? false
        if scheduling || (session!.nextDeadline.map { $0 <= now } ?? false) {
            schedulingCheckAt = nil
            session!.handleTimeout(endpoint: &endpoint, now: now)
        }
        if let deadline = joinDeadline, deadline <= now {
            joinDeadline = nil
            events.append(.joinTimedOut(after: joinWait))
        }
        if let deadline = departureDeadline, deadline <= now {
            departureDeadline = nil
            events.append(.departed(acknowledged: false))
        }
        if let deadline = subscriberDeadline, deadline <= now {
            subscriberDeadline = nil
            events.append(.subscriberWaitOver)
        }
        settle(&endpoint, now: now)
    }

    /// Runs a local membership operation (``SessionMembership/setActivity(_:)``, an invitation), then applies its
    /// actions. Without a session `body` does not run and the result is `nil`.
    @discardableResult
    public mutating func update<Result>(
        _ endpoint: inout Endpoint, now: Instant, _ body: (inout SessionMembership) throws -> Result
    ) rethrows -> Result? {
        guard session != nil else { return nil }
        let result = try session!.update(&endpoint, now: now, body)
        settle(&endpoint, now: now)
        return result
    }

    /// Runs a local journal operation (``JournalState/add(_:leaves:now:)``, ``JournalState/remove(_:now:)``), then
    /// applies its actions.
    public mutating func updateJournal<Result>(
        _ endpoint: inout Endpoint, now: Instant, _ body: (inout JournalState) throws -> Result
    ) rethrows -> Result {
        let result = try journal.update(&endpoint, now: now, body)
        settle(&endpoint, now: now)
        return result
    }

    /// Announces this node's departure (``SessionMembership/leave()``) or the end of the session for everyone
    /// (``SessionMembership/end()``), then waits for every open connection to acknowledge it and everything else in
    /// flight: ``SessionEvent/departed(acknowledged:)`` says when, or that ``SessionTiming/departureTimeout`` passed
    /// first. The owner closes the connections after that event.
    public mutating func depart(endingSession: Bool, endpoint: inout Endpoint, now: Instant) {
        guard session != nil else { return }
        session!.update(&endpoint, now: now) { membership in
            if endingSession { membership.end() } else { membership.leave() }
        }
        joinDeadline = nil
        departureDeadline = now + timing.departureTimeout
        settle(&endpoint, now: now)
    }

    /// Forgets the session on `endpoint` (after ``SessionEvent/departed(acknowledged:)``, a failed join or the end
    /// of the session): closes every connection first when `closingConnections` (removing a peer closes its connection
    /// too, with a reason that says less), removes the members' credentials and the session's admissions, and drops
    /// the membership. The journal stays for the owner to read until it discards the machine.
    public mutating func finish(closingConnections: Bool, endpoint: inout Endpoint, now: Instant) {
        guard let session else { return }
        if closingConnections {
            for id in endpoint.connectionIDs {
                endpoint.close(id, code: .noError, reason: "left the session", now: now)
            }
        }
        for member in session.membership.roster where member.staticKey != endpoint.staticKey {
            endpoint.removePeer(member.staticKey, now: now)
        }
        for grant in session.membership.openInvitations { endpoint.removeAdmission(grant.id) }
        if let id = session.membership.sessionAdmission { endpoint.removeAdmission(id) }
        self.session = nil
        (joinDeadline, departureDeadline, subscriberDeadline, schedulingCheckAt) = (nil, nil, nil, nil)
    }

    /// The owner holds input back until an application subscriber takes what is waiting: after
    /// ``SessionTiming/subscriberWait`` it gets ``SessionEvent/subscriberWaitOver`` (once per wait). A wait already
    /// running keeps its deadline.
    public mutating func waitForSubscriber(now: Instant) {
        if subscriberDeadline == nil { subscriberDeadline = now + timing.subscriberWait }
    }

    /// A subscriber came (or the wait no longer matters): no ``SessionEvent/subscriberWaitOver`` for this wait.
    public mutating func subscriberArrived() {
        subscriberDeadline = nil
    }

    /// Takes back the result of a store action the owner applied (see ``pollStoreAction()``).
    public mutating func complete(_ completion: JournalStoreCompletion, endpoint: inout Endpoint, now: Instant) {
        journal.complete(completion, endpoint: &endpoint, now: now)
        settle(&endpoint, now: now)
    }

    // MARK: - Outputs

    /// The next session event for the application, or `nil`.
    public mutating func pollEvent() -> SessionEvent? { events.popFirst() }

    /// The next journal event, or `nil`.
    public mutating func pollJournalEvent() -> JournalEvent? { journal.pollEvent() }

    /// The next store action the owner must apply (only with deferred store actions), with the verifier its chunk
    /// must pass, or `nil`.
    public mutating func pollStoreAction() -> (action: JournalAction, verifier: ChunkVerifier?)? {
        guard let action = journal.pollStoreAction() else { return nil }
        return (action, journal.verifier(for: action))
    }

    /// The earliest instant at which ``handleTimeout(endpoint:now:)`` has work. It reads no clock and allocates
    /// nothing (the transport asks after every input).
    public var nextDeadline: Instant? {
        var deadline = Instant.earliest(journal.nextDeadline, session?.nextDeadline)
        deadline = Instant.earliest(deadline, schedulingCheckAt)
        deadline = Instant.earliest(deadline, Instant.earliest(joinDeadline, departureDeadline))
        deadline = Instant.earliest(deadline, subscriberDeadline)
        if let expiresAt = session?.membership.earliestInvitationExpiry {
            let seconds = Double(expiresAt) - wallClockAtZero
            // Far-future expiries (a test's `.max`) would overflow an instant; they are not a deadline to keep.
            if seconds < 1e9 {
                deadline = Instant.earliest(
                    deadline, Instant(nanoseconds: Int64((max(0, seconds) * 1e9).rounded(.up))))
            }
        }
        return deadline
    }

    /// Wall-clock seconds since 1970 at `now`.
    public func wallClock(at now: Instant) -> Double {
        wallClockAtZero + Double(now.nanoseconds) / 1e9
    }

    // MARK: - Steps

    /// The end of every input: session events pass through the journal into ``events``, and the waits follow the
    /// membership (joined, settled, scheduling to set up).
    private mutating func settle(_ endpoint: inout Endpoint, now: Instant) {
        while let event = session?.pollEvent() {
            if case .waitingForApproval = event, let deadline = joinDeadline {
                // A person is to answer: the wait grows by their time (once: a later sponsor's JOIN_WAITING after a
                // sponsor went away keeps the deadline it has).
                if joinWait == timing.joinTimeout {
                    joinWait += ProtocolLimits.joinApprovalTimeout
                    joinDeadline = deadline + ProtocolLimits.joinApprovalTimeout
                }
            }
            guard let passed = journal.handle(event, endpoint: &endpoint, now: now) else { continue }
            events.append(passed)
        }
        // Read in place (`session!`), not bound to a local: this runs after every input, and a local copy would retain
        // and release every buffer the core holds.
        guard session != nil else { return }
        if joinDeadline != nil, session!.membership.phase != .joining { joinDeadline = nil }
        if session!.needsScheduling {
            // Remembered, not pushed back by every input: a steady flow of inputs must not postpone it.
            if schedulingCheckAt == nil { schedulingCheckAt = now + timing.schedulingDelay }
        } else {
            schedulingCheckAt = nil
        }
        if departureDeadline != nil, Self.departureSettled(endpoint) {
            departureDeadline = nil
            events.append(.departed(acknowledged: true))
        }
    }

    /// Whether every open connection acknowledged every membership message (the departure announcement among them)
    /// and has nothing else in flight. A peer that already closed owes no acknowledgement.
    static func departureSettled(_ endpoint: Endpoint) -> Bool {
        endpoint.connectionIDs.allSatisfy { id in
            guard let connection = endpoint.connection(id), connection.isOpen else { return true }
            return connection.bytesInFlight == 0
                && connection.unacknowledgedMessageCount(on: MembershipMessage.channel) == 0
        }
    }
}
