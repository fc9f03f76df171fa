import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// The sans-IO state of a node's session, driven together on the transport's event loop: membership
/// (``SessionCore``) and the journal (``JournalCore``) over the session's on-disk chunk store. Session events pass
/// through the journal, which keeps its own messages and participant changes to itself and hands the rest on.
struct SessionCores: Sendable {
    /// What one step produced, for the engine to dispatch off the event loop.
    struct Output: Sendable {
        var sessionEvents: [SessionEvent] = []
        var journalEvents: [JournalEvent] = []

        /// Whether there is nothing to dispatch.
        var isEmpty: Bool { sessionEvents.isEmpty && journalEvents.isEmpty }
    }

    var session: SessionCore
    /// The journal, whose store actions ``storeWorker`` applies off the event loop.
    var journal: JournalCore<FileChunkStore>
    let storeWorker: ChunkStoreWorker
    /// Which of the engine's sessions these cores run (outputs of an earlier one are not dispatched).
    let generation: Int
    /// When the session core's pending schedules get set up (see ``nextDeadline(now:unixNow:)``).
    var schedulingCheckAt: Instant?

    init(
        membership: SessionMembership, local: X25519PublicKey, store: FileChunkStore, storeWorker: ChunkStoreWorker,
        generation: Int
    ) {
        session = SessionCore(membership: membership)
        journal = JournalCore(local: local, store: store, defersStoreActions: true)
        self.storeWorker = storeWorker
        self.generation = generation
    }

    /// Feeds one endpoint event through membership and journal.
    mutating func handle(_ event: EndpointEvent, endpoint: inout Endpoint, now: Instant) {
        session.handle(event, endpoint: &endpoint, now: now)
    }

    /// The earliest instant any timer of the cores is due: the journal's (request timeouts, HAVE batches), the
    /// session's (redials, join retries) and the expiry of an open invitation (wall-clock `unixNow` seconds at
    /// `now`).
    ///
    /// A schedule the session core still has to set up (``SessionCore/needsScheduling``) is due a second after it was
    /// first seen (as the engine's former once-a-second housekeeping ran it), remembered so that a steady flow of
    /// inputs cannot keep pushing it back.
    mutating func nextDeadline(now: Instant, unixNow: Double) -> Instant? {
        if session.needsScheduling {
            if schedulingCheckAt == nil { schedulingCheckAt = now + Self.schedulingDelay }
        } else {
            schedulingCheckAt = nil
        }
        // Asked after every input on the event loop: nothing here may allocate.
        let expiry = session.membership.earliestInvitationExpiry.map { expiresAt in
            now + .milliseconds(Int64(max(0, (Double(expiresAt) - unixNow) * 1000).rounded(.up)))
        }
        return Instant.earliest(
            Instant.earliest(journal.nextDeadline, session.nextDeadline), Instant.earliest(expiry, schedulingCheckAt))
    }

    /// How long after the session core first needs a schedule set up its timeout runs.
    static let schedulingDelay = Duration.seconds(1)

    /// Runs every timer that is due at `now` (wall-clock `unixNow` seconds): journal timers, session redials and join
    /// retries, invitation expiry.
    mutating func runTimers(endpoint: inout Endpoint, now: Instant, unixNow: Double) {
        if let deadline = journal.nextDeadline, deadline <= now {
            journal.handleTimeout(endpoint: &endpoint, now: now)
        }
        let expired = session.membership.expiredInvitations(at: UInt64(max(0, unixNow)))
        if !expired.isEmpty {
            session.update(&endpoint, now: now) { membership in
                for id in expired { membership.closeInvitation(id) }
            }
        }
        let scheduling = schedulingCheckAt.map { $0 <= now } ?? false
        if scheduling || (session.nextDeadline.map { $0 <= now } ?? false) {
            schedulingCheckAt = nil
            session.handleTimeout(endpoint: &endpoint, now: now)
        }
    }

    /// Takes back results of the store actions ``storeWorker`` applied, in order.
    mutating func completeStoreActions(_ completions: [JournalStoreCompletion], endpoint: inout Endpoint, now: Instant)
    {
        for completion in completions { journal.complete(completion, endpoint: &endpoint, now: now) }
    }

    /// Collects every pending event: session events go through the journal first. Delivery confirmations are
    /// dropped here (nothing off the event loop uses them, and a fast sender gets one per message). The journal's
    /// store actions go to ``storeWorker``.
    mutating func drain(endpoint: inout Endpoint, now: Instant) -> Output {
        var output = Output()
        while let event = session.pollEvent() {
            guard let passed = journal.handle(event, endpoint: &endpoint, now: now) else { continue }
            if case .delivered = passed { continue }
            output.sessionEvents.append(passed)
        }
        while let event = journal.pollEvent() { output.journalEvents.append(event) }
        submitStoreActions()
        return output
    }

    /// Hands the journal's deferred store actions to ``storeWorker``, each with its attachment's verifier.
    private mutating func submitStoreActions() {
        guard var action = journal.pollStoreAction() else { return }
        var jobs: [ChunkStoreWorker.Job] = []
        while true {
            jobs.append(ChunkStoreWorker.Job(action: action, verifier: journal.verifier(for: action)))
            guard let next = journal.pollStoreAction() else { break }
            action = next
        }
        storeWorker.submit(jobs)
    }
}
