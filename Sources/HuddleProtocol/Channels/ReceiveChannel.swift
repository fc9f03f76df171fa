import HuddleWire

/// The receiving side of one ordered, reliable channel of one connection: reassembles fragments into messages and
/// delivers them exactly once, in sequence order, byte-identical to what the peer enqueued.
///
/// ``receive(_:budget:)`` checks every fragment, in this order and before allocating anything, and throws
/// ``ProtocolError/protocolViolation(_:)`` (which closes the connection) with the first failure:
///
/// 1. `0 <= offset`, `offset + length <= totalLength <= WireLimits.maxMessageSize` - else
///    ``ProtocolViolation/fragmentOutOfBounds(channel:sequence:)`` (TEST-MATRIX F4, F5);
/// 2. `totalLength` equals what earlier fragments of the same message said - else `fragmentOutOfBounds`;
/// 3. for a message not seen before, `sequence - next <= ProtocolLimits.maxMessageSequenceGap`, where `next` is the
///    first sequence not yet complete in order - else ``ProtocolViolation/sequenceGapTooLarge(channel:sequence:next:)``
///    (D9);
/// 4. for a message not seen before, the connection's ``ReassemblyBudget`` admits it - else
///    ``ProtocolViolation/reassemblyBudgetExceeded(limit:)`` or ``ProtocolViolation/flowControlExceeded(limit:)`` (D7);
/// 5. bytes that overlap bytes already received are identical - else
///    ``ProtocolViolation/inconsistentFragmentData(channel:sequence:)`` (F5).
///
/// Fragments of messages already delivered, and bytes already buffered, are ignored (TEST-MATRIX N5). A message's
/// buffer is allocated when its first fragment arrives, exactly `totalLength` bytes; an incomplete message also keeps
/// a bitmap of received bytes (1/8 of its size), so each fragment costs time proportional to its own length whatever
/// the arrival order. A fragment that carries a whole message needs neither, and one that is also the next in order
/// is queued for delivery at once.
///
/// A message is released from the budget when it becomes deliverable (it and every earlier one complete); it then
/// waits in this channel until ``pollDelivered()`` returns it, so poll after every ``receive(_:budget:)``.
public struct ReceiveChannel: Sendable {
    /// The channel this side receives on.
    public let channel: ChannelID
    /// Bytes held for reassembly or ordering (allocated for messages not yet deliverable); counted in the budget.
    public private(set) var bufferedBytes = 0

    /// The first sequence not yet complete in order; everything below it is deliverable or delivered.
    private var nextExpected: UInt64 = 0
    /// Messages at or after `nextExpected` with at least one fragment received.
    private var pending: [UInt64: InboundMessage] = [:]
    /// Deliverable messages, in sequence order, from `readyHead` on.
    private var ready: [[UInt8]] = []
    private var readyHead = 0

    /// A channel that expects sequence 0 first.
    public init(channel: ChannelID) {
        self.channel = channel
    }

    /// The sequence of the message the next ``pollDelivered()`` returns (or the next to complete, if none waits).
    public var nextSequenceToDeliver: MessageSequence {
        MessageSequence(nextExpected - UInt64(ready.count - readyHead))
    }

    /// Messages received in part or in full that are not yet deliverable.
    public var bufferedMessages: Int { pending.count }

    /// Whether ``pollDelivered()`` would return a message.
    public var hasDeliverableMessage: Bool { readyHead < ready.count }

    /// Adds one fragment; see the type's documentation for the checks. Throws, changing nothing in this channel or
    /// in `budget`, on the first failed check.
    ///
    /// - Precondition: `fragment.channel == channel` (the connection routes fragments by channel).
    public mutating func receive(_ fragment: MessageFragment, budget: inout ReassemblyBudget) throws(ProtocolError) {
        precondition(fragment.channel == channel, "fragment for channel \(fragment.channel) given to \(channel)")
        let sequence = fragment.sequence.rawValue
        let offset = fragment.offset
        let totalLength = fragment.totalLength
        let length = fragment.data.count
        guard totalLength >= 0, totalLength <= WireLimits.maxMessageSize, offset >= 0, offset <= totalLength,
            length <= totalLength - offset
        else {
            throw .protocolViolation(.fragmentOutOfBounds(channel: channel.rawValue, sequence: sequence))
        }
        guard sequence >= nextExpected else { return }  // Already complete (and deliverable or delivered).

        if let index = pending.index(forKey: sequence) {
            guard pending.values[index].totalLength == totalLength else {
                throw .protocolViolation(.fragmentOutOfBounds(channel: channel.rawValue, sequence: sequence))
            }
            let completed = try pending.values[index].merge(
                offset: offset, data: fragment.data, channel: channel, sequence: sequence)
            if completed {
                budget.completeMessage()
                if sequence == nextExpected { advance(budget: &budget) }
            }
            return
        }

        guard sequence - nextExpected <= UInt64(ProtocolLimits.maxMessageSequenceGap) else {
            throw .protocolViolation(
                .sequenceGapTooLarge(channel: channel.rawValue, sequence: sequence, next: nextExpected))
        }
        let isWhole = length == totalLength
        try budget.admit(totalLength: totalLength, incomplete: !isWhole)
        if isWhole, sequence == nextExpected {
            // Fast path: the next message in one fragment is deliverable at once.
            budget.release(totalLength: totalLength)
            ready.append(Array(fragment.data))
            nextExpected += 1
            if !pending.isEmpty { advance(budget: &budget) }
            return
        }
        pending[sequence] = InboundMessage(totalLength: totalLength, offset: offset, data: fragment.data)
        bufferedBytes += totalLength
    }

    /// The next message in sequence order, byte-identical to what the peer enqueued, or `nil` if the next one is not
    /// complete yet. Each message is returned exactly once.
    public mutating func pollDelivered() -> [UInt8]? {
        guard readyHead < ready.count else { return nil }
        let message = ready[readyHead]
        ready[readyHead] = []
        readyHead += 1
        if readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
        }
        return message
    }

    /// Moves complete messages from `nextExpected` on to the delivery queue and releases their budget.
    private mutating func advance(budget: inout ReassemblyBudget) {
        while let index = pending.index(forKey: nextExpected), pending.values[index].isComplete {
            let message = pending.remove(at: index).value
            bufferedBytes -= message.totalLength
            budget.release(totalLength: message.totalLength)
            ready.append(message.bytes)
            nextExpected += 1
        }
    }
}
