import DequeModule
import HuddleWire

/// The sending side of one ordered, reliable channel of one connection: numbers messages, cuts them into fragments,
/// and keeps every byte until the peer has acknowledged it.
///
/// Guarantees:
///
/// - Messages get consecutive sequence numbers from 0, in ``enqueue(_:)`` order, and their new data goes out in that
///   order.
/// - Lost bytes are offered again by ``nextFragment(maxDataLength:newDataCredit:incompleteMessages:)`` ahead of new
///   data, as a new fragment for a new packet (never an old packet resent); bytes acknowledged meanwhile are not
///   offered again. A message's bytes are freed once every byte of it has been acknowledged; its sequence is reported
///   by ``pollCompleted()`` once it and every earlier message are (the peer has then delivered it: it delivers in
///   sequence order), with the tag it was enqueued with.
/// - Memory is bounded: at most ``ProtocolLimits/maxQueuedBytesPerChannel`` unacknowledged message bytes, and at most
///   ``ProtocolLimits/maxQueuedMessagesPerChannel`` sequences from the oldest unacknowledged to the newest, so the
///   peer's gap check (``ProtocolLimits/maxMessageSequenceGap``) can never trip.
/// - Flow control: the first fragment of a message consumes credit for the message's whole total length (what the
///   receiver allocates for it); later fragments and retransmissions consume none. An empty message needs no credit.
/// - A message is cut into several fragments only if a slot of the connection's ``IncompleteMessageAllowance`` is
///   free, so the peer's incomplete-message limit is never exceeded.
///
/// The channel never reads a clock and never decides what is lost: the connection's loss detection does.
public struct SendChannel: Sendable {
    /// The channel this side sends on.
    public let channel: ChannelID
    /// Whether each new fragment of a small message goes twice (``ConnectionConfiguration/duplicatedChannels``); the
    /// connection sets it when it creates the channel, so no packet looks the channel up.
    public var isDuplicated = false
    /// Message bytes enqueued and not yet acknowledged in full.
    public private(set) var queuedBytes = 0
    /// Messages enqueued and not yet acknowledged in full.
    public private(set) var queuedMessages = 0
    /// The sequence number the next enqueued message will get.
    public private(set) var nextSequence = MessageSequence(0)

    /// Unacknowledged messages; `messages[i]` has sequence `baseSequence + i`, freed ones are `nil`.
    private var messages: [OutgoingMessage?] = []
    /// The index of the oldest unacknowledged message in `messages` (or `messages.count`).
    private var head = 0
    /// The sequence of `messages[0]`.
    private var baseSequence: UInt64 = 0
    /// The sequence of the message whose new data goes out next (`nextSequence` when all has been sent once).
    private var newDataSequence: UInt64 = 0
    /// Sequences with bytes declared lost and not yet resent, ascending, without duplicates.
    private var retransmissions: [UInt64] = []
    /// The first sequence not yet reported by ``pollCompleted()``: every earlier one is acknowledged, and so are
    /// those up to ``oldestUnacknowledged``.
    private var completedUpTo: UInt64 = 0
    /// The tags of the messages from `completedUpTo` to `nextSequence`, in sequence order: kept past a message's
    /// acknowledgement (which frees its bytes) until its completion is reported, so a report names the tag.
    private var tags = Deque<UInt64>()

    /// An empty channel; the first message will be sequence 0.
    public init(channel: ChannelID) {
        self.channel = channel
    }

    // MARK: - State

    /// Whether every enqueued message has been acknowledged in full.
    public var isIdle: Bool { queuedMessages == 0 }

    /// Whether some bytes wait to be sent: a retransmission or new data (which may still be blocked by flow control,
    /// the incomplete-message allowance or the space offered).
    public var hasDataToSend: Bool { hasRetransmissions || hasNewData }

    /// Whether bytes declared lost wait to be resent.
    public var hasRetransmissions: Bool { !retransmissions.isEmpty }

    /// Whether some message has bytes that were never sent.
    public var hasNewData: Bool { newDataSequence < nextSequence.rawValue }

    /// The flow-control credit the next new message needs before its first fragment can go (its total length), or
    /// `nil` if there is no unsent message or the current one is already under way. Use it to decide on DATA_BLOCKED.
    public var creditNeededForNextMessage: Int? {
        guard let index = index(of: newDataSequence), !messages[index]!.started else { return nil }
        return messages[index]!.bytes.count
    }

    /// The sequences the peer may not have delivered, ascending: the oldest message not acknowledged in full and
    /// every later one, acknowledged or not. What to report as failed if the connection closes: the peer delivers in
    /// sequence order, so a message acknowledged behind a gap waits in its reorder buffer and is lost with the
    /// connection unless the gap is filled first.
    public var undeliveredSequences: [MessageSequence] {
        (oldestUnacknowledged..<nextSequence.rawValue).map { MessageSequence($0) }
    }

    /// ``undeliveredSequences`` with the tag each message was enqueued with.
    public var undeliveredMessages: [(sequence: MessageSequence, tag: UInt64)] {
        let first = oldestUnacknowledged
        let offset = Int(first - completedUpTo)
        return (first..<nextSequence.rawValue).enumerated().map { index, sequence in
            (MessageSequence(sequence), tags[offset + index])
        }
    }

    /// How many messages ``undeliveredSequences`` lists, without building the list.
    public var undeliveredCount: Int { Int(nextSequence.rawValue - oldestUnacknowledged) }

    /// The oldest unacknowledged sequence, or `nextSequence` if there is none.
    private var oldestUnacknowledged: UInt64 {
        head < messages.count ? baseSequence + UInt64(head) : nextSequence.rawValue
    }

    private func index(of sequence: UInt64) -> Int? {
        guard sequence >= baseSequence, sequence < nextSequence.rawValue else { return nil }
        let index = Int(sequence - baseSequence)
        return index >= head && messages[index] != nil ? index : nil
    }

    // MARK: - Enqueueing

    /// Queues `message` and returns its sequence number (0, 1, 2, ... per channel). `tag`, a number of the caller's
    /// choosing (0 when it has none), comes back with the message's completion (``pollCompleted()``) or in
    /// ``undeliveredMessages``: it lets the application name the messages a report covers.
    ///
    /// Throws, changing nothing, ``ProtocolError/messageTooLarge(size:limit:)`` if it exceeds
    /// `WireLimits.maxMessageSize` (256 KiB; exactly 256 KiB is accepted), or ``ProtocolError/queueFull(limit:)`` if
    /// it would take the unacknowledged bytes past ``ProtocolLimits/maxQueuedBytesPerChannel`` or the outstanding
    /// sequences past ``ProtocolLimits/maxQueuedMessagesPerChannel``. After `queueFull`, wait for acknowledgments
    /// (``pollCompleted()``) and try again.
    public mutating func enqueue(_ message: [UInt8], tag: UInt64 = 0) throws(ProtocolError) -> MessageSequence {
        guard message.count <= WireLimits.maxMessageSize else {
            throw .messageTooLarge(size: message.count, limit: WireLimits.maxMessageSize)
        }
        guard message.count <= ProtocolLimits.maxQueuedBytesPerChannel - queuedBytes else {
            throw .queueFull(limit: ProtocolLimits.maxQueuedBytesPerChannel)
        }
        guard nextSequence.rawValue - oldestUnacknowledged < UInt64(ProtocolLimits.maxQueuedMessagesPerChannel) else {
            throw .queueFull(limit: ProtocolLimits.maxQueuedMessagesPerChannel)
        }
        guard let following = nextSequence.next else {
            preconditionFailure("2^62 messages on one channel")
        }
        if head == messages.count {
            messages.removeAll(keepingCapacity: true)
            head = 0
            baseSequence = nextSequence.rawValue
        }
        let sequence = nextSequence
        messages.append(OutgoingMessage(bytes: message))
        tags.append(tag)
        nextSequence = following
        queuedBytes += message.count
        queuedMessages += 1
        return sequence
    }

    // MARK: - Sending

    /// The next fragment to send, at most `maxDataLength` data bytes long, or `nil` if nothing can go now.
    ///
    /// Order: first bytes declared lost (lowest sequence first; they consume no credit), then new data in sequence
    /// order. A message's first fragment needs `newDataCredit >= totalLength` and subtracts the total length from it;
    /// with too little credit no new message starts, but retransmissions and the rest of a started message still go.
    /// A fragment shorter than its message needs a slot of `incompleteMessages` unless the message already holds one.
    /// Fragments of non-empty messages are never empty; an empty message goes as one fragment of length 0.
    ///
    /// The connection encodes the fragment right away with ``withFragment(for:_:)``, stores the record with the
    /// packet, and later passes it to ``onAcknowledged(_:incompleteMessages:)`` or ``onLost(_:)`` (or to both, in
    /// that order of events, after a spurious loss).
    /// Call repeatedly while there is room; `nil` with ``hasDataToSend`` still `true` means the space, the credit or
    /// the allowance did not suffice, so try again with a new packet or after acknowledgments.
    ///
    /// - Precondition: `maxDataLength >= 0`.
    public mutating func nextFragment(
        maxDataLength: Int, newDataCredit: inout UInt64, incompleteMessages: inout IncompleteMessageAllowance
    ) -> FragmentRecord? {
        precondition(maxDataLength >= 0, "negative maxDataLength")
        return next(.dataLength(maxDataLength), credit: &newDataCredit, allowance: &incompleteMessages)
    }

    /// Like ``nextFragment(maxDataLength:newDataCredit:incompleteMessages:)``, but sized so that the whole encoded
    /// MESSAGE frame (type, fields and data) fits in `frameSpace` bytes; `nil` if not even that fits.
    public mutating func nextFragment(
        frameSpace: Int, newDataCredit: inout UInt64, incompleteMessages: inout IncompleteMessageAllowance
    ) -> FragmentRecord? {
        next(.frameSpace(frameSpace), credit: &newDataCredit, allowance: &incompleteMessages)
    }

    /// The bytes `record` covers, sharing the channel's storage, or `nil` if its message is already acknowledged.
    public func data(for record: FragmentRecord) -> ArraySlice<UInt8>? {
        guard record.channel == channel, let index = index(of: record.sequence.rawValue) else { return nil }
        return messages[index]!.bytes[record.range]
    }

    /// Calls `body` with the MESSAGE frame for `record`, whose data points into the channel's storage (valid only
    /// during the call), and returns its result.
    ///
    /// - Precondition: `record` came from this channel and its message is not yet acknowledged in full (true for a
    ///   record just returned by `nextFragment`).
    public func withFragment<Result, Failure: Error>(
        for record: FragmentRecord, _ body: (MessageFragment) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard record.channel == channel, let index = index(of: record.sequence.rawValue) else {
            preconditionFailure("\(record) is not an unacknowledged fragment of channel \(channel)")
        }
        let outcome: Swift.Result<Result, Failure> = messages[index]!.bytes.withUnsafeBytes { raw in
            let fragment = MessageFragment(
                channel: channel, sequence: record.sequence, offset: record.offset, totalLength: record.totalLength,
                data: UnsafeRawBufferPointer(rebasing: raw[record.range]))
            do throws(Failure) {
                return .success(try body(fragment))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    // MARK: - Acknowledgments and losses

    /// The packet carrying `record` was acknowledged. Its bytes will not be resent, even if they were declared lost
    /// before and are still queued for resending (a spurious loss); when the whole message is acknowledged its bytes
    /// are freed, its slot in `incompleteMessages` (if any) is returned and its sequence queued for
    /// ``pollCompleted()``. Acknowledging a fragment of an already completed message does nothing.
    public mutating func onAcknowledged(
        _ record: FragmentRecord, incompleteMessages: inout IncompleteMessageAllowance
    ) {
        precondition(record.channel == channel, "\(record) belongs to another channel")
        guard let index = index(of: record.sequence.rawValue) else { return }
        if !record.isWholeMessage {
            let added = messages[index]!.acknowledged.insert(record.range)
            messages[index]!.acknowledgedCount += added
            messages[index]!.lost.remove(record.range)
            guard messages[index]!.acknowledgedCount == record.totalLength else {
                if !messages[index]!.hasRetransmission { removeRetransmission(record.sequence.rawValue) }
                return
            }
        }
        free(index: index, incompleteMessages: &incompleteMessages)
    }

    /// The packet carrying `record` was declared lost. The bytes of `record` not acknowledged meanwhile are queued to
    /// be sent again in a new fragment. Call at most once per record (calling again only causes a redundant resend);
    /// the record may still be acknowledged later. A record of a completed message is ignored.
    public mutating func onLost(_ record: FragmentRecord) {
        precondition(record.channel == channel, "\(record) belongs to another channel")
        let sequence = record.sequence.rawValue
        guard let index = index(of: sequence) else { return }
        if record.totalLength == 0 {
            messages[index]!.emptyMessageLost = true
        } else if messages[index]!.acknowledgedCount == 0 {
            messages[index]!.lost.insert(record.range)
        } else {
            for gap in messages[index]!.acknowledged.gaps(in: record.range) { messages[index]!.lost.insert(gap) }
        }
        if messages[index]!.hasRetransmission { addRetransmission(sequence) }
    }

    /// The next message delivered to the peer since the last call, in sequence order, or `nil`: acknowledged in full
    /// together with every earlier message, so the peer's protocol core has handed it over (it delivers in sequence
    /// order once a message and all earlier ones are complete). A message acknowledged behind a gap is not reported
    /// until the gap is acknowledged.
    public mutating func pollCompleted() -> (sequence: MessageSequence, tag: UInt64)? {
        guard completedUpTo < oldestUnacknowledged else { return nil }
        defer { completedUpTo += 1 }
        return (MessageSequence(completedUpTo), tags.removeFirst())
    }

    // MARK: - Internals

    private enum SpaceLimit {
        case dataLength(Int)
        case frameSpace(Int)
    }

    private struct OutgoingMessage: Sendable {
        let bytes: [UInt8]
        /// New data sent so far: `0 ..< sentEnd`.
        var sentEnd = 0
        /// Whether the first fragment went out (and credit was consumed).
        var started = false
        var acknowledged = ByteRangeSet()
        var acknowledgedCount = 0
        /// Bytes declared lost and not yet resent.
        var lost = ByteRangeSet()
        /// An empty message's only fragment was declared lost and not yet resent.
        var emptyMessageLost = false
        /// Whether the message holds an ``IncompleteMessageAllowance`` slot.
        var holdsSlot = false

        var hasRetransmission: Bool { emptyMessageLost || !lost.isEmpty }
    }

    private func maxLength(_ limit: SpaceLimit, sequence: UInt64, offset: Int, totalLength: Int) -> Int? {
        switch limit {
        case .dataLength(let length):
            return length
        case .frameSpace(let space):
            return MessageFragment.maxDataLength(
                fitting: space, channel: channel, sequence: MessageSequence(sequence), offset: offset,
                totalLength: totalLength)
        }
    }

    private func record(_ sequence: UInt64, _ offset: Int, _ length: Int, _ totalLength: Int) -> FragmentRecord {
        FragmentRecord(
            channel: channel, sequence: MessageSequence(sequence), offset: offset, length: length,
            totalLength: totalLength)
    }

    private mutating func next(
        _ limit: SpaceLimit, credit: inout UInt64, allowance: inout IncompleteMessageAllowance
    ) -> FragmentRecord? {
        if let resent = nextRetransmission(limit, allowance: &allowance) { return resent }
        return nextNewData(limit, credit: &credit, allowance: &allowance)
    }

    /// The first queued retransmission that fits `limit` and the allowance; blocked ones are skipped, not dropped.
    private mutating func nextRetransmission(
        _ limit: SpaceLimit, allowance: inout IncompleteMessageAllowance
    ) -> FragmentRecord? {
        var position = 0
        while position < retransmissions.count {
            let sequence = retransmissions[position]
            guard let index = index(of: sequence), messages[index]!.hasRetransmission else {
                retransmissions.remove(at: position)
                continue
            }
            let total = messages[index]!.bytes.count
            if total == 0 {
                guard maxLength(limit, sequence: sequence, offset: 0, totalLength: 0) != nil else {
                    position += 1
                    continue
                }
                messages[index]!.emptyMessageLost = false
                retransmissions.remove(at: position)
                return record(sequence, 0, 0, 0)
            }
            let range = messages[index]!.lost.first!
            guard let space = maxLength(limit, sequence: sequence, offset: range.lowerBound, totalLength: total),
                space > 0
            else {
                position += 1
                continue
            }
            let length = min(range.count, space)
            if length < total, !messages[index]!.holdsSlot {
                guard allowance.take() else {
                    position += 1
                    continue
                }
                messages[index]!.holdsSlot = true
            }
            messages[index]!.lost.remove(range.lowerBound..<range.lowerBound + length)
            if !messages[index]!.hasRetransmission { retransmissions.remove(at: position) }
            return record(sequence, range.lowerBound, length, total)
        }
        return nil
    }

    private mutating func nextNewData(
        _ limit: SpaceLimit, credit: inout UInt64, allowance: inout IncompleteMessageAllowance
    ) -> FragmentRecord? {
        let sequence = newDataSequence
        guard let index = index(of: sequence) else { return nil }
        let total = messages[index]!.bytes.count
        let offset = messages[index]!.sentEnd
        guard let space = maxLength(limit, sequence: sequence, offset: offset, totalLength: total) else { return nil }
        let length = min(total - offset, space)
        guard length > 0 || total == 0 else { return nil }
        if !messages[index]!.started {
            guard credit >= UInt64(total) else { return nil }
            if length < total {
                guard allowance.take() else { return nil }
                messages[index]!.holdsSlot = true
            }
            credit -= UInt64(total)
            messages[index]!.started = true
        }
        messages[index]!.sentEnd = offset + length
        if offset + length == total { newDataSequence += 1 }
        return record(sequence, offset, length, total)
    }

    private mutating func free(index: Int, incompleteMessages: inout IncompleteMessageAllowance) {
        let message = messages[index]!
        let sequence = baseSequence + UInt64(index)
        if message.holdsSlot { incompleteMessages.giveBack() }
        if message.hasRetransmission { removeRetransmission(sequence) }
        messages[index] = nil
        queuedBytes -= message.bytes.count
        queuedMessages -= 1
        while head < messages.count, messages[head] == nil { head += 1 }
        if head == messages.count {
            messages.removeAll(keepingCapacity: true)
            baseSequence = nextSequence.rawValue
            head = 0
        } else if head >= 64, head * 2 >= messages.count {
            messages.removeFirst(head)
            baseSequence += UInt64(head)
            head = 0
        }
    }

    /// The position of `sequence` in `retransmissions`, or where it would be inserted.
    private func retransmissionPosition(_ sequence: UInt64) -> Int {
        var low = 0
        var high = retransmissions.count
        while low < high {
            let middle = (low + high) / 2
            if retransmissions[middle] < sequence { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private mutating func addRetransmission(_ sequence: UInt64) {
        let position = retransmissionPosition(sequence)
        if position == retransmissions.count || retransmissions[position] != sequence {
            retransmissions.insert(sequence, at: position)
        }
    }

    private mutating func removeRetransmission(_ sequence: UInt64) {
        let position = retransmissionPosition(sequence)
        if position < retransmissions.count, retransmissions[position] == sequence {
            retransmissions.remove(at: position)
        }
    }
}
