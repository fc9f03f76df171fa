import HuddleCrypto
import NIOConcurrencyHelpers

/// Every reliable message of one session whose outcome is still open, by receipt, and the outcome of every one that
/// failed: what ``Messenger/outcome(of:)`` answers from, and what makes a failure report name its receipts.
///
/// A receipt is open while some recipient has neither confirmed it nor been reported unable to. Its entry is bounded
/// by what the transport holds for that recipient (the outbound queue, then the send window): every message it
/// accepted ends in one of the two (issue 34's exactly-once-or-reported promise), and the session's end closes the
/// rest (``closeAll()``). Outcomes of failed receipts are kept for the session's life, like the failure reports
/// themselves (eight bytes and a participant per failed recipient); a receipt neither open nor failed was delivered.
final class DeliveryLedger: Sendable {
    private struct Entry {
        let recipients: RecipientGroup
        /// Recipients that have not confirmed it and were not reported unable to.
        var waitingFor: RecipientMask
        var failures: [Participant: DeliveryFailure.Reason] = [:]
        var waiters: [CheckedContinuation<DeliveryOutcome, Never>] = []

        init(recipients: RecipientGroup) {
            self.recipients = recipients
            waitingFor = RecipientMask(count: recipients.members.count)
        }

        /// Stops waiting for `peer`; the participant it is, if it was waited for.
        mutating func settle(_ peer: X25519PublicKey) -> Participant? {
            guard let number = recipients.number(of: peer), waitingFor.remove(number) else { return nil }
            return recipients.members[number]
        }
    }

    private struct State {
        var lastID: UInt64 = 0
        var open: [UInt64: Entry] = [:]
        var failed: [UInt64: [Participant: DeliveryFailure.Reason]] = [:]
        /// Set once the session is over: later sends are refused before they get here, later reports find nothing.
        var closed = false
    }

    private let state = NIOLockedValueBox(State())

    /// The next receipt number, for a message sent to nobody or unreliably (nothing to confirm).
    func nextID() -> UInt64 {
        state.withLockedValue { state in
            state.lastID += 1
            return state.lastID
        }
    }

    /// Opens a receipt for a reliable message to `recipients` and returns its number. Once the
    /// session is over (a send that raced its end) the receipt is failed at once.
    func open(for recipients: RecipientGroup) -> UInt64 {
        state.withLockedValue { state in
            state.lastID += 1
            if state.closed {
                state.failed[state.lastID] = Dictionary(
                    uniqueKeysWithValues: recipients.members.map { ($0, .sessionEnded) })
            } else if !recipients.members.isEmpty {
                state.open[state.lastID] = Entry(recipients: recipients)
            }
            return state.lastID
        }
    }

    /// Whether receipt number `id` was handed out by this ledger.
    func issued(_ id: UInt64) -> Bool {
        state.withLockedValue { id >= 1 && id <= $0.lastID }
    }

    /// `peer` confirmed the messages `tags` names (receipt numbers; others, such as 0, are ignored).
    func delivered(_ tags: [(peer: X25519PublicKey, tag: UInt64)]) {
        let resumed = state.withLockedValue { state in
            var resumed: [(CheckedContinuation<DeliveryOutcome, Never>, DeliveryOutcome)] = []
            for (peer, tag) in tags {
                // One lookup: the entry is changed in place through its index.
                guard let index = state.open.index(forKey: tag), state.open.values[index].settle(peer) != nil else {
                    continue
                }
                if state.open.values[index].waitingFor.isEmpty { Self.settle(at: index, in: &state, into: &resumed) }
            }
            return resumed
        }
        for (waiter, outcome) in resumed { waiter.resume(returning: outcome) }
    }

    /// `peer` will not confirm the messages `tags` names, for `reason`. Returns the receipt numbers this settles for
    /// `peer` (ascending; those still open for it: a receipt is reported once per recipient).
    func failed(_ tags: [UInt64], for peer: X25519PublicKey, reason: DeliveryFailure.Reason) -> [UInt64] {
        let (named, resumed) = state.withLockedValue { state in
            var named: [UInt64] = []
            var resumed: [(CheckedContinuation<DeliveryOutcome, Never>, DeliveryOutcome)] = []
            for tag in tags {
                guard let participant = state.open[tag]?.settle(peer) else { continue }
                state.open[tag]!.failures[participant] = reason
                named.append(tag)
                Self.settleIfDone(tag, in: &state, into: &resumed)
            }
            return (named.sorted(), resumed)
        }
        for (waiter, outcome) in resumed { waiter.resume(returning: outcome) }
        return named
    }

    /// Closes every open receipt (the session is over): returns, per recipient, the receipt numbers it had not
    /// confirmed, ascending, which are now failed with ``DeliveryFailure/Reason/sessionEnded``.
    func closeAll() -> [Participant: [UInt64]] {
        let (unconfirmed, resumed) = state.withLockedValue { state in
            state.closed = true
            var unconfirmed: [Participant: [UInt64]] = [:]
            var resumed: [(CheckedContinuation<DeliveryOutcome, Never>, DeliveryOutcome)] = []
            for tag in state.open.keys.sorted() {
                let entry = state.open[tag]!
                for number in entry.waitingFor.members {
                    let participant = entry.recipients.members[number]
                    unconfirmed[participant, default: []].append(tag)
                    state.open[tag]!.failures[participant] = .sessionEnded
                }
                state.open[tag]!.waitingFor = RecipientMask(count: 0)
                Self.settleIfDone(tag, in: &state, into: &resumed)
            }
            return (unconfirmed, resumed)
        }
        for (waiter, outcome) in resumed { waiter.resume(returning: outcome) }
        return unconfirmed
    }

    /// The outcome of reliable receipt `id`, waiting while it is open.
    func outcome(of id: UInt64) async -> DeliveryOutcome {
        if let settled = settledOutcome(of: id) { return settled }
        return await withCheckedContinuation { continuation in
            let settled: DeliveryOutcome? = state.withLockedValue { state in
                guard state.open[id] != nil else { return Self.settled(id, in: state) }
                state.open[id]!.waiters.append(continuation)
                return nil
            }
            if let settled { continuation.resume(returning: settled) }
        }
    }

    /// How many receipts are open (for tests).
    var openCount: Int { state.withLockedValue { $0.open.count } }

    private func settledOutcome(of id: UInt64) -> DeliveryOutcome? {
        state.withLockedValue { state in state.open[id] == nil ? Self.settled(id, in: state) : nil }
    }

    private static func settled(_ id: UInt64, in state: State) -> DeliveryOutcome {
        state.failed[id].map { .failed($0) } ?? .delivered
    }

    /// Moves receipt `tag` out of the open ones once no recipient is left to hear from.
    private static func settleIfDone(
        _ tag: UInt64, in state: inout State,
        into resumed: inout [(CheckedContinuation<DeliveryOutcome, Never>, DeliveryOutcome)]
    ) {
        guard let index = state.open.index(forKey: tag), state.open.values[index].waitingFor.isEmpty else { return }
        settle(at: index, in: &state, into: &resumed)
    }

    /// Moves the open receipt at `index`, which no recipient is left to hear from, out of the open ones.
    private static func settle(
        at index: Dictionary<UInt64, Entry>.Index, in state: inout State,
        into resumed: inout [(CheckedContinuation<DeliveryOutcome, Never>, DeliveryOutcome)]
    ) {
        let (tag, entry) = state.open.remove(at: index)
        if !entry.failures.isEmpty { state.failed[tag] = entry.failures }
        let outcome: DeliveryOutcome = entry.failures.isEmpty ? .delivered : .failed(entry.failures)
        for waiter in entry.waiters { resumed.append((waiter, outcome)) }
    }
}
