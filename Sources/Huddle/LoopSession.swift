import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// What the engine keeps on the transport's event loop for its current session: the ``SessionMachine`` that ships
/// (the same type every simulator node drives), the worker that applies its store actions off the loop, and which
/// of the engine's sessions it is. It holds no session logic: ``drain()`` only moves the machine's output to where it
/// goes.
struct LoopSession {
    /// What one step produced, for the engine to dispatch off the event loop.
    struct Output: Sendable {
        var sessionEvents: [SessionEvent] = []
        var journalEvents: [JournalEvent] = []
        /// The wait for a subscriber ended (``SessionEvent/subscriberWaitOver``).
        var subscriberWaitOver = false
        /// The departure settled (``SessionEvent/departed(acknowledged:)``).
        var departed = false

        /// Whether the output carries one of the two signals above. They go around the engine's dispatcher, not
        /// through the inbox it reads: the dispatcher may itself be the one waiting (for a subscriber, or for room in
        /// a subscription whose reader stopped reading while the app leaves).
        var hasSignals: Bool { subscriberWaitOver || departed }

        /// Whether there is nothing to dispatch.
        var isEmpty: Bool { sessionEvents.isEmpty && journalEvents.isEmpty }
    }

    /// The session: membership and journal over the session's on-disk chunk store.
    var machine: SessionMachine<FileChunkStore>
    /// Applies the journal's store actions off the event loop.
    let storeWorker: ChunkStoreWorker
    /// Which of the engine's sessions this is (outputs of an earlier one are not dispatched).
    let generation: Int
    /// The session's receipts: confirmations settle them here, on the loop (no hop to the engine for a sender that
    /// only hears acknowledgements).
    let deliveries: DeliveryLedger
    /// The confirmations of one drain, in a buffer kept between drains.
    private var confirmations: [(peer: X25519PublicKey, tag: UInt64)] = []

    init(
        machine: SessionMachine<FileChunkStore>, storeWorker: ChunkStoreWorker, generation: Int,
        deliveries: DeliveryLedger
    ) {
        self.machine = machine
        self.storeWorker = storeWorker
        self.generation = generation
        self.deliveries = deliveries
    }

    /// The machine's next deadline, read in place (the driver asks after every input).
    mutating func nextDeadline() -> Instant? { machine.nextDeadline }

    /// Collects the machine's pending output. The messenger's delivery confirmations settle their receipts in
    /// ``deliveries`` at once (the others concern nothing off the event loop). The journal's store actions go to
    /// ``storeWorker``.
    mutating func drain() -> Output {
        var output = Output()
        while let event = machine.pollEvent() {
            switch event {
            case .delivered(let peer, let channel, _, let receipt):
                // A message's tag is its receipt number; 0 is a message sent without one.
                if SessionEngine.isMessengerChannel(channel), receipt > 0 { confirmations.append((peer, receipt)) }
            case .subscriberWaitOver: output.subscriberWaitOver = true
            case .departed: output.departed = true
            default: output.sessionEvents.append(event)
            }
        }
        if !confirmations.isEmpty {
            deliveries.delivered(confirmations)
            confirmations.removeAll(keepingCapacity: true)
        }
        while let event = machine.pollJournalEvent() { output.journalEvents.append(event) }
        submitStoreActions()
        return output
    }

    /// Hands the machine's store actions to ``storeWorker``, each with its attachment's verifier.
    private mutating func submitStoreActions() {
        guard let first = machine.pollStoreAction() else { return }
        var jobs = [ChunkStoreWorker.Job(action: first.action, verifier: first.verifier)]
        while let next = machine.pollStoreAction() {
            jobs.append(ChunkStoreWorker.Job(action: next.action, verifier: next.verifier))
        }
        storeWorker.submit(jobs)
    }
}
