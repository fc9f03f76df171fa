import HuddleCrypto
import HuddleProtocol

/// The sans-IO state of a node's session, driven together on the transport's event loop: membership
/// (``SessionCore``) and the journal (``JournalCore``) over the session's on-disk chunk store. Session events pass
/// through the journal, which keeps its own messages and participant changes to itself and hands the rest on.
struct SessionCores: Sendable {
    /// What one step produced, for the engine to dispatch off the event loop.
    struct Output: Sendable {
        var sessionEvents: [SessionEvent] = []
        var journalEvents: [JournalEvent] = []
    }

    var session: SessionCore
    var journal: JournalCore<FileChunkStore>

    init(membership: SessionMembership, local: X25519PublicKey, store: FileChunkStore) {
        session = SessionCore(membership: membership)
        journal = JournalCore(local: local, store: store)
    }

    /// Feeds one endpoint event through membership and journal.
    mutating func handle(_ event: EndpointEvent, endpoint: inout Endpoint, now: Instant) {
        session.handle(event, endpoint: &endpoint, now: now)
    }

    /// Runs the journal's timers if they are due; returns how long until the next one (`nil`: none).
    mutating func runJournalTimers(endpoint: inout Endpoint, now: Instant) -> Duration? {
        if let deadline = journal.nextDeadline, deadline <= now {
            journal.handleTimeout(endpoint: &endpoint, now: now)
        }
        return journal.nextDeadline.map { $0 - now }
    }

    /// Collects every pending event: session events go through the journal first.
    mutating func drain(endpoint: inout Endpoint, now: Instant) -> Output {
        var output = Output()
        while let event = session.pollEvent() {
            if let passed = journal.handle(event, endpoint: &endpoint, now: now) { output.sessionEvents.append(passed) }
        }
        while let event = journal.pollEvent() { output.journalEvents.append(event) }
        return output
    }
}
