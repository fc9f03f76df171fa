import HuddleProtocol
import HuddleSession
import HuddleWire

/// The always-on checker of the churn scenario: every reliable message a member accepted for another member, and what
/// became of it.
///
/// The contract it checks (issue 11, Apple's `.reliable` plus Huddle's reports): a message sent by incarnation `s` of
/// one node to incarnation `r` of another while both were members is delivered to `r` exactly once, in order per
/// (`s`, `r`), byte-identical, or it is reported to `s` as undelivered with a reason. It reaches a later incarnation
/// of the recipient only if it never reached the earlier one (the connection it waited on completed its handshake
/// with the later one), never an earlier one, and nothing is delivered that was never sent. Violations are recorded as they happen; ``unresolved(aliveSenders:)`` lists, at the
/// end of a run, accepted messages that were neither delivered nor reported.
public struct ChurnLedger {
    /// One sender incarnation's message to one recipient node.
    public struct Key: Hashable, Sendable {
        /// Sender node index.
        public var sender: Int
        /// Sender incarnation.
        public var senderIncarnation: Int
        /// The sender's message counter (one per message, shared by all its recipients).
        public var counter: UInt32
        /// Recipient node index.
        public var recipient: Int
    }

    /// What the ledger knows of one accepted message.
    struct Entry {
        /// The recipient's incarnation when the message was sent, or `nil` when the recipient was down then (the
        /// sender's roster still named it): the message may reach whichever incarnation connects next, once.
        var recipientIncarnation: Int?
        /// When the sender accepted it.
        var sentAt: Instant
        /// When it was delivered, if it was.
        var deliveredAt: Instant?
        var reported: DeliveryFailureReason?
        /// When it was reported undelivered, if it was.
        var reportedAt: Instant?

        var delivered: Bool { deliveredAt != nil }
    }

    /// Why a message was both delivered and reported: the report says the sender could not confirm delivery, which
    /// is true only if the acknowledgement could not reach it.
    public enum ConfirmationLoss: String, Sendable, CaseIterable {
        /// The recipient stopped (crashed or left) after delivering it, perhaps before acknowledging.
        case recipientStopped = "recipient stopped"
        /// The recipient was frozen (a stopped process) between the send and the report: the sender's connection
        /// timed out before the recipient could read the message, which waited in its socket buffer.
        case recipientPaused = "recipient paused"
        /// The sender was frozen (a stopped process) from before the acknowledgement could reach it until after the
        /// recipient's idle timeout closed the connection: the acknowledgement waited in the sender's socket buffer,
        /// and on waking the sender learned the connection was gone first.
        case senderPaused = "sender paused"
        /// The sender's connection ended while the acknowledgement could still be on its way.
        case acknowledgementInFlight = "acknowledgement in flight"
        /// A datagram from the recipient to the sender was lost or dropped after the message was sent.
        case acknowledgementLost = "acknowledgement lost"
    }

    /// A (connection, sequence) on a sender's endpoint, to resolve failure reports.
    struct SequenceKey: Hashable {
        var sender: Int
        var senderIncarnation: Int
        var connection: ConnectionID
        var sequence: MessageSequence
    }

    var entries: [Key: Entry] = [:]
    var bySequence: [SequenceKey: Key] = [:]
    /// Highest counter delivered per (sender, sender incarnation, recipient, recipient incarnation).
    var lastDelivered: [[Int]: UInt32] = [:]
    /// Every violation seen, in order.
    public private(set) var violations: [String] = []
    /// Messages accepted (per recipient).
    public private(set) var accepted = 0
    /// Messages delivered.
    public private(set) var delivered = 0
    /// Messages reported undelivered, by reason.
    public private(set) var reported: [DeliveryFailureReason: Int] = [:]
    /// Messages both delivered and reported, by why the sender could not confirm the delivery
    /// (``classifyDeliveredAndReported(now:lastDrop:)``). Any other such message is a violation: a report that
    /// says "not confirmed" about a delivery whose acknowledgement had every chance to arrive.
    public private(set) var deliveredAndReported: [ConfirmationLoss: Int] = [:]
    /// Messages that became both delivered and reported and are not classified yet.
    var unclassified: [Key] = []
    /// When each (node, incarnation) stopped (crashed, or closed its connections after leaving).
    var stoppedAt: [[Int]: Instant] = [:]
    /// When each node was frozen, and until when.
    var pauses: [Int: [Range<Instant>]] = [:]
    /// How long after a delivery the acknowledgement may still be on its way: the path's one-way latency (and
    /// jitter) plus the receiver's maximum acknowledgement delay, with room for a batch. Set by the scenario.
    public var acknowledgementWindow: Duration = .milliseconds(100)

    /// Datagrams sent, per (sender, sender incarnation, counter, recipient node).
    var datagramsSent: Set<Key> = []
    /// Datagrams received, per (sender, sender incarnation, counter, recipient node, recipient incarnation).
    var datagramsReceived: Set<[Int]> = []
    /// Every datagram violation seen (altered, duplicated, never sent), in order.
    public private(set) var datagramViolations: [String] = []
    /// Datagrams sent (per recipient) and received.
    public private(set) var datagramCounts = (sent: 0, received: 0)

    public init() {}

    /// Records that `sender` queued datagram `counter` for `recipient`.
    public mutating func sentDatagram(sender: Int, senderIncarnation: Int, counter: UInt32, recipient: Int) {
        datagramsSent.insert(
            Key(sender: sender, senderIncarnation: senderIncarnation, counter: counter, recipient: recipient))
        datagramCounts.sent += 1
    }

    /// Records a datagram delivered to incarnation `incarnation` of `recipient`: it must have been sent to that node,
    /// arrive unaltered and at most once.
    public mutating func receivedDatagram(_ bytes: [UInt8], recipient: Int, incarnation: Int, time: Instant) {
        guard let key = Self.key(of: bytes, tag: Self.datagramTag, recipient: recipient) else {
            datagramViolations.append("\(time): node \(recipient) received a datagram nobody sent")
            return
        }
        let name =
            "datagram \(key.counter) of node \(key.sender)#\(key.senderIncarnation) at node \(recipient)#\(incarnation)"
        guard datagramsSent.contains(key) else {
            datagramViolations.append("\(time): \(name) was never sent to it")
            return
        }
        guard Self.isIntact(bytes, key: key, tag: Self.datagramTag) else {
            datagramViolations.append("\(time): \(name) arrived altered")
            return
        }
        guard
            datagramsReceived.insert([key.sender, key.senderIncarnation, Int(key.counter), recipient, incarnation])
                .inserted
        else {
            datagramViolations.append("\(time): \(name) delivered twice")
            return
        }
        datagramCounts.received += 1
    }

    /// The first byte of a reliable message's payload.
    public static let messageTag: UInt8 = 0xC4
    /// The first byte of a datagram's payload.
    public static let datagramTag: UInt8 = 0xD4

    /// The payload of message (or datagram) `counter` from incarnation `incarnation` of node `sender`, `size` bytes
    /// (at least 8), starting with `tag`.
    public static func payload(
        sender: Int, incarnation: Int, counter: UInt32, size: Int, tag: UInt8 = messageTag
    ) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(size, 8))
        bytes[0] = tag
        bytes[1] = UInt8(sender)
        bytes[2] = UInt8(truncatingIfNeeded: incarnation)
        bytes[3] = UInt8(truncatingIfNeeded: incarnation >> 8)
        for index in 0..<4 { bytes[4 + index] = UInt8(truncatingIfNeeded: counter >> (8 * UInt32(index))) }
        for index in 8..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: Int(counter) &* 31 &+ index) }
        return bytes
    }

    /// The key `bytes` (a ``payload(sender:incarnation:counter:size:tag:)`` starting with `tag`) names at node
    /// `recipient`, or `nil` when they are not such a payload.
    static func key(of bytes: [UInt8], tag: UInt8, recipient: Int) -> Key? {
        guard bytes.count >= 8, bytes[0] == tag else { return nil }
        return Key(
            sender: Int(bytes[1]), senderIncarnation: Int(bytes[2]) | Int(bytes[3]) << 8,
            counter: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[4 + $1]) << (8 * UInt32($1)) },
            recipient: recipient)
    }

    /// Whether `bytes` are exactly the payload `key` names.
    static func isIntact(_ bytes: [UInt8], key: Key, tag: UInt8) -> Bool {
        bytes
            == payload(
                sender: key.sender, incarnation: key.senderIncarnation, counter: key.counter, size: bytes.count,
                tag: tag)
    }

    /// Records that incarnation `senderIncarnation` of `sender` accepted message `counter` for incarnation
    /// `recipientIncarnation` of `recipient` (`nil`: the recipient was down), on `connection` with `sequence`, at
    /// `time`.
    public mutating func sent(
        sender: Int, senderIncarnation: Int, counter: UInt32, recipient: Int, recipientIncarnation: Int?,
        connection: ConnectionID, sequence: MessageSequence, time: Instant
    ) {
        let key = Key(sender: sender, senderIncarnation: senderIncarnation, counter: counter, recipient: recipient)
        if let learned = removalLearned[[sender, senderIncarnation, recipient]], learned <= time {
            violations.append(
                "\(time): node \(sender)#\(senderIncarnation) sent message \(counter) to node \(recipient), which it "
                    + "learned at \(learned) was removed")
        }
        if let recipientIncarnation,
            let learned = departureLearned[[sender, senderIncarnation, recipient, recipientIncarnation]],
            learned <= time
        {
            violations.append(
                "\(time): node \(sender)#\(senderIncarnation) sent message \(counter) to node "
                    + "\(recipient)#\(recipientIncarnation), which it learned at \(learned) had left")
        }
        entries[key] = Entry(recipientIncarnation: recipientIncarnation, sentAt: time)
        bySequence[
            SequenceKey(
                sender: sender, senderIncarnation: senderIncarnation, connection: connection, sequence: sequence)] = key
        accepted += 1
    }

    /// Records a delivery of `bytes` at incarnation `incarnation` of node `recipient`, at `time`.
    public mutating func received(_ bytes: [UInt8], recipient: Int, incarnation: Int, time: Instant) {
        guard let key = Self.key(of: bytes, tag: Self.messageTag, recipient: recipient) else {
            violations.append("\(time): node \(recipient) received a message nobody sent (\(bytes.count) bytes)")
            return
        }
        let (sender, senderIncarnation, counter) = (key.sender, key.senderIncarnation, key.counter)
        let name = "message \(counter) of node \(sender)#\(senderIncarnation) at node \(recipient)#\(incarnation)"
        guard var entry = entries[key] else {
            violations.append("\(time): \(name) was never sent to it")
            return
        }
        guard Self.isIntact(bytes, key: key, tag: Self.messageTag) else {
            violations.append("\(time): \(name) arrived altered")
            return
        }
        if let removed = removedAt[[recipient, incarnation]], removed < time {
            violations.append("\(time): \(name) was delivered after its recipient learned at \(removed) it was removed")
        }
        // A later incarnation may receive it when the connection it was queued on never reached the earlier one
        // (that one crashed before the handshake completed; the same identity then completed it): it reaches the
        // same participant once. An earlier incarnation never receives what was sent to a later one.
        if entry.recipientIncarnation.map({ $0 < incarnation }) ?? true { entry.recipientIncarnation = incarnation }
        guard entry.recipientIncarnation == incarnation else {
            violations.append(
                "\(time): \(name) was sent to incarnation \(entry.recipientIncarnation!), delivered to \(incarnation)")
            return
        }
        guard !entry.delivered else {
            violations.append("\(time): \(name) delivered twice")
            return
        }
        let pair = [sender, senderIncarnation, recipient, incarnation]
        if let last = lastDelivered[pair], last >= counter {
            violations.append("\(time): \(name) delivered after message \(last) (out of order)")
        }
        lastDelivered[pair] = counter
        entry.deliveredAt = time
        delivered += 1
        if entry.reported != nil { unclassified.append(key) }
        entries[key] = entry
    }

    /// Records a report, at incarnation `senderIncarnation` of `sender`, that the messages with `sequences` on
    /// `connection` will not be delivered, for `reason`.
    public mutating func reportedUndelivered(
        sender: Int, senderIncarnation: Int, connection: ConnectionID, sequences: [MessageSequence],
        reason: DeliveryFailureReason, time: Instant
    ) {
        for sequence in sequences {
            let lookup = SequenceKey(
                sender: sender, senderIncarnation: senderIncarnation, connection: connection, sequence: sequence)
            guard let key = bySequence[lookup], var entry = entries[key] else { continue }
            guard entry.reported == nil else {
                violations.append("\(time): message \(key.counter) of node \(sender) reported twice")
                continue
            }
            entry.reported = reason
            entry.reportedAt = time
            reported[reason, default: 0] += 1
            if entry.delivered { unclassified.append(key) }
            entries[key] = entry
        }
    }

    /// When each removed (node, incarnation) learned of its removal.
    var removedAt: [[Int]: Instant] = [:]
    /// When each (observer, observer incarnation, removed node) learned of the removal.
    var removalLearned: [[Int]: Instant] = [:]
    /// Removals seen applied: (removed node, observers that learned of it).
    public private(set) var removalsObserved = 0
    /// When each (observer, observer incarnation, node, node incarnation) learned that the node left.
    var departureLearned: [[Int]: Instant] = [:]

    /// Records that incarnation `incarnation` of `observer` saw `node` join again: it may send to it.
    public mutating func learnedReturn(observer: Int, incarnation: Int, of node: Int) {
        departureLearned = departureLearned.filter {
            $0.key[0] != observer || $0.key[1] != incarnation || $0.key[2] != node
        }
    }

    /// Records that incarnation `incarnation` of `observer` learned at `time` that incarnation `nodeIncarnation` of
    /// `node` left: it must send that incarnation nothing after that (a later one, joined again, is a new member).
    public mutating func learnedDeparture(
        observer: Int, incarnation: Int, of node: Int, nodeIncarnation: Int, time: Instant
    ) {
        if departureLearned[[observer, incarnation, node, nodeIncarnation]] == nil {
            departureLearned[[observer, incarnation, node, nodeIncarnation]] = time
        }
    }

    /// Records that incarnation `incarnation` of `node` learned at `time` that it was removed: it must receive nothing
    /// after that.
    public mutating func removed(node: Int, incarnation: Int, time: Instant) {
        if removedAt[[node, incarnation]] == nil { removedAt[[node, incarnation]] = time }
    }

    /// Records that incarnation `incarnation` of `observer` learned at `time` that `node` was removed: it must send
    /// `node` nothing after that.
    public mutating func learnedRemoval(observer: Int, incarnation: Int, of node: Int, time: Instant) {
        if removalLearned[[observer, incarnation, node]] == nil {
            removalLearned[[observer, incarnation, node]] = time
            removalsObserved += 1
        }
    }

    /// Records that incarnation `incarnation` of `node` stopped at `time` (crashed, or closed its connections after
    /// leaving): what it delivered but had not acknowledged yet never will be.
    public mutating func stopped(node: Int, incarnation: Int, time: Instant) {
        if stoppedAt[[node, incarnation]] == nil { stoppedAt[[node, incarnation]] = time }
    }

    /// Records what `event`, which incarnation `incarnation` of `node` reported at `time`, says about the messages on
    /// `channel` (a delivery or a failure report) and the datagrams on `datagramChannel`; other events are the
    /// scenario's to handle.
    public mutating func record(
        _ event: SessionEvent, node: Int, incarnation: Int, time: Instant, channel: ChannelID,
        datagramChannel: ChannelID? = nil
    ) {
        switch event {
        case .message(_, let messageChannel, let bytes) where messageChannel == channel:
            received(bytes, recipient: node, incarnation: incarnation, time: time)
        case .datagram(_, let messageChannel, let bytes) where messageChannel == datagramChannel:
            receivedDatagram(bytes, recipient: node, incarnation: incarnation, time: time)
        case .undelivered(_, let connection, let messages, let reason):
            reportedUndelivered(
                sender: node, senderIncarnation: incarnation, connection: connection,
                sequences: messages.filter { $0.channel == channel }.map(\.sequence), reason: reason, time: time)
        default:
            break
        }
    }

    /// Records that `node` is frozen (processes nothing) from `time` until `until`.
    public mutating func paused(node: Int, from time: Instant, until: Instant) {
        pauses[node, default: []].append(time..<until)
    }

    /// Classifies the messages that became both delivered and reported since the last call, at `now`: each must
    /// have lost its confirmation for a reason (``ConfirmationLoss``); one that did not is a violation.
    /// `lastDrop(from, to)` is when the network last lost a datagram from node `from` to node `to`.
    public mutating func classifyDeliveredAndReported(now: Instant, lastDrop: (Int, Int) -> Instant?) {
        for key in unclassified {
            guard let entry = entries[key], let deliveredAt = entry.deliveredAt, let reportedAt = entry.reportedAt,
                let incarnation = entry.recipientIncarnation
            else { continue }
            let cause: ConfirmationLoss
            if let stopped = stoppedAt[[key.recipient, incarnation]], stopped <= reportedAt {
                cause = .recipientStopped
            } else if pauses[key.recipient, default: []].contains(where: {
                $0.lowerBound <= reportedAt && $0.upperBound >= entry.sentAt
            }) {
                cause = .recipientPaused
            } else if pauses[key.sender, default: []].contains(where: {
                $0.lowerBound <= deliveredAt + acknowledgementWindow && $0.upperBound >= deliveredAt
            }) {
                cause = .senderPaused
            } else if reportedAt <= deliveredAt + acknowledgementWindow {
                cause = .acknowledgementInFlight
            } else if let drop = lastDrop(key.recipient, key.sender), drop >= entry.sentAt {
                cause = .acknowledgementLost
            } else {
                violations.append(
                    "\(now): message \(key.counter) of node \(key.sender)#\(key.senderIncarnation) was delivered to "
                        + "node "
                        + "\(key.recipient)#\(incarnation) at \(deliveredAt) and reported \(entry.reported!) at "
                        + "\(reportedAt), though the recipient stayed up and nothing it sent to the sender was lost")
                continue
            }
            deliveredAndReported[cause, default: 0] += 1
        }
        unclassified.removeAll(keepingCapacity: true)
    }

    /// Accepted messages between incarnations that are both still running at the end (`alive`: node index ->
    /// incarnation) that were neither delivered to the incarnation they were sent to nor reported, as descriptions
    /// (at most `limit`). A recipient that crashed may have acknowledged a message it never handed to its
    /// application (Apple's contract: a member that leaves before delivery may miss it); its sender cannot know, so
    /// such messages are not counted.
    public func unresolved(alive: [Int: Int], limit: Int = 10) -> (count: Int, examples: [String]) {
        var count = 0
        var examples: [String] = []
        for (key, entry) in entries
        where alive[key.sender] == key.senderIncarnation && entry.recipientIncarnation != nil
            && alive[key.recipient] == entry.recipientIncarnation
        {
            guard !entry.delivered, entry.reported == nil else { continue }
            // A removed member's messages that reached a member after it learned of the removal are dropped there
            // (counted as from a non-member) though its transport confirmed them: the removed sender is not owed an
            // outcome past its removal (docs/SECURITY.md). Only a recipient that learned of the removal may do so.
            if let incarnation = entry.recipientIncarnation,
                removalLearned[[key.recipient, incarnation, key.sender]] != nil
            {
                continue
            }
            count += 1
            if examples.count < limit {
                let sequence = bySequence.first { $0.value == key }?.key
                examples.append(
                    "message \(key.counter) of node \(key.sender)#\(key.senderIncarnation) to node "
                        + "\(key.recipient)#\(entry.recipientIncarnation!)"
                        + (sequence.map { " (connection \($0.connection), sequence \($0.sequence))" } ?? ""))
            }
        }
        return (count, examples.sorted())
    }
}
