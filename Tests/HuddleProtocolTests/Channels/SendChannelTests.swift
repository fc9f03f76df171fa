import HuddleProtocol
import HuddleWire
import Testing

@Suite("Send channel")
struct SendChannelTests {
    static let channel = ChannelID(3)

    /// Sends everything `channel` offers with unlimited credit and `maxDataLength`, one record per call.
    static func sendAll(
        _ channel: inout SendChannel, maxDataLength: Int, credit: UInt64 = .max,
        allowance: inout IncompleteMessageAllowance
    ) -> [FragmentRecord] {
        var credit = credit
        var records: [FragmentRecord] = []
        while let record = channel.nextFragment(
            maxDataLength: maxDataLength, newDataCredit: &credit, incompleteMessages: &allowance)
        {
            records.append(record)
        }
        return records
    }

    @Test("Sequence numbers are consecutive from 0")
    func consecutiveSequences() throws {
        var sender = SendChannel(channel: Self.channel)
        for expected in 0..<UInt64(10) {
            #expect(try sender.enqueue([UInt8(expected)]).rawValue == expected)
        }
        #expect(sender.nextSequence.rawValue == 10)
        #expect(sender.queuedMessages == 10)
        #expect(sender.queuedBytes == 10)
    }

    @Test("256 KiB is accepted, 256 KiB + 1 is messageTooLarge and changes nothing")
    func messageSizeLimit() throws {
        var sender = SendChannel(channel: Self.channel)
        #expect(throws: ProtocolError.messageTooLarge(size: 262_145, limit: 262_144)) {
            try sender.enqueue([UInt8](repeating: 1, count: WireLimits.maxMessageSize + 1))
        }
        #expect(sender.queuedBytes == 0 && sender.nextSequence.rawValue == 0)
        #expect(try sender.enqueue([UInt8](repeating: 1, count: WireLimits.maxMessageSize)).rawValue == 0)
        #expect(sender.queuedBytes == WireLimits.maxMessageSize)
    }

    @Test("Exactly 32 MiB may be queued; one byte more is queueFull until an acknowledgment frees room")
    func queuedBytesLimit() throws {
        #expect(ProtocolLimits.maxQueuedBytesPerChannel == 32 * 1024 * 1024)
        var sender = SendChannel(channel: Self.channel)
        let big = [UInt8](repeating: 7, count: WireLimits.maxMessageSize)
        for _ in 0..<128 { _ = try sender.enqueue(big) }
        #expect(sender.queuedBytes == ProtocolLimits.maxQueuedBytesPerChannel)
        #expect(throws: ProtocolError.queueFull(limit: ProtocolLimits.maxQueuedBytesPerChannel)) {
            try sender.enqueue([1])
        }
        #expect(sender.nextSequence.rawValue == 128, "a refused message takes no sequence number")
        #expect(try sender.enqueue([]).rawValue == 128, "an empty message still fits")

        var allowance = IncompleteMessageAllowance()
        var credit = UInt64.max
        let first = try #require(
            sender.nextFragment(maxDataLength: big.count, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(first.isWholeMessage && first.sequence.rawValue == 0)
        sender.onAcknowledged(first, incompleteMessages: &allowance)
        #expect(sender.queuedBytes == ProtocolLimits.maxQueuedBytesPerChannel - big.count)
        #expect(try sender.enqueue([1]).rawValue == 129)
    }

    @Test("1025 outstanding sequences are accepted, the 1026th is queueFull (never trips the peer's gap check)")
    func queuedSequenceSpanLimit() throws {
        #expect(ProtocolLimits.maxQueuedMessagesPerChannel == ProtocolLimits.maxMessageSequenceGap + 1)
        var sender = SendChannel(channel: Self.channel)
        for _ in 0..<ProtocolLimits.maxQueuedMessagesPerChannel { _ = try sender.enqueue([]) }
        #expect(throws: ProtocolError.queueFull(limit: 1025)) { try sender.enqueue([]) }

        var allowance = IncompleteMessageAllowance()
        let records = Self.sendAll(&sender, maxDataLength: 100, allowance: &allowance)
        #expect(records.count == 1025)
        // Acknowledging a later message does not move the oldest unacknowledged one.
        sender.onAcknowledged(records[5], incompleteMessages: &allowance)
        #expect(throws: ProtocolError.queueFull(limit: 1025)) { try sender.enqueue([]) }
        sender.onAcknowledged(records[0], incompleteMessages: &allowance)
        #expect(try sender.enqueue([]).rawValue == 1025)
        #expect(throws: ProtocolError.queueFull(limit: 1025)) { try sender.enqueue([]) }
    }

    @Test("An empty message is one fragment of length 0, needs no credit, and completes when acknowledged")
    func emptyMessage() throws {
        var sender = SendChannel(channel: Self.channel)
        _ = try sender.enqueue([])
        var allowance = IncompleteMessageAllowance()
        var credit: UInt64 = 0
        let record = try #require(
            sender.nextFragment(maxDataLength: 0, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(record.offset == 0 && record.length == 0 && record.totalLength == 0 && record.isWholeMessage)
        #expect(sender.data(for: record)?.isEmpty == true)
        #expect(sender.nextFragment(maxDataLength: 0, newDataCredit: &credit, incompleteMessages: &allowance) == nil)

        sender.onLost(record)
        #expect(sender.hasRetransmissions)
        let resent = try #require(
            sender.nextFragment(maxDataLength: 0, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(resent == record)
        sender.onAcknowledged(resent, incompleteMessages: &allowance)
        #expect(sender.drainCompleted() == [0])
        #expect(sender.isIdle && !sender.hasDataToSend)
    }

    @Test("Messages are cut at maxDataLength; only split messages take an allowance slot, returned on full ack")
    func fragmentation() throws {
        var sender = SendChannel(channel: Self.channel)
        let exact = channelTestMessage(length: 1168, seed: 1)
        let oneMore = channelTestMessage(length: 1169, seed: 2)
        _ = try sender.enqueue(exact)
        _ = try sender.enqueue(oneMore)
        var allowance = IncompleteMessageAllowance()
        let records = Self.sendAll(&sender, maxDataLength: 1168, allowance: &allowance)
        #expect(records.map(\.range) == [0..<1168, 0..<1168, 1168..<1169])
        #expect(records.map(\.sequence.rawValue) == [0, 1, 1])
        #expect(records[0].isWholeMessage && !records[1].isWholeMessage)
        #expect(allowance.inUse == 1)
        #expect(Array(sender.data(for: records[1])!) == Array(oneMore[0..<1168]))
        #expect(Array(sender.data(for: records[2])!) == [oneMore[1168]])

        sender.onAcknowledged(records[2], incompleteMessages: &allowance)
        #expect(allowance.inUse == 1 && sender.drainCompleted().isEmpty)
        sender.onAcknowledged(records[1], incompleteMessages: &allowance)
        #expect(allowance.inUse == 0)
        #expect(
            sender.drainCompleted().isEmpty,
            "acknowledged behind a gap: the peer holds it in its reorder buffer and has not delivered it")
        #expect(
            sender.undeliveredSequences == [MessageSequence(0), MessageSequence(1)],
            "a close now must report both: the peer loses its reorder buffer with the connection")
        #expect(sender.undeliveredCount == 2)
        #expect(sender.data(for: records[1]) == nil, "freed once acknowledged")
        sender.onAcknowledged(records[0], incompleteMessages: &allowance)
        #expect(sender.drainCompleted() == [0, 1], "completion is reported in sequence order once the gap is filled")
        #expect(sender.undeliveredSequences.isEmpty && sender.undeliveredCount == 0)
        #expect(sender.isIdle && sender.queuedBytes == 0)
    }

    @Test("frameSpace fragments encode to frames that fill the space exactly")
    func frameSpaceSizing() throws {
        var sender = SendChannel(channel: ChannelID(200))
        let message = channelTestMessage(length: 70_000, seed: 3)
        _ = try sender.enqueue(message)
        var allowance = IncompleteMessageAllowance()
        var credit = UInt64.max
        var reassembled: [UInt8] = []
        for space in [1168, 1168, 50, 12, 1168] {
            let record = try #require(
                sender.nextFragment(frameSpace: space, newDataCredit: &credit, incompleteMessages: &allowance))
            let written = sender.withFragment(for: record) { fragment -> Int in
                var storage = [UInt8](repeating: 0, count: space)
                return storage.withUnsafeMutableBytes { buffer in
                    var writer = ByteWriter(buffer)
                    try! fragment.encode(into: &writer)
                    return writer.bytesWritten
                }
            }
            #expect(written == space, "space \(space), record \(record)")
            reassembled += sender.data(for: record)!
        }
        #expect(reassembled == Array(message[0..<reassembled.count]))
        // Room for the header but no data byte, or not even the header: nothing.
        #expect(sender.nextFragment(frameSpace: 11, newDataCredit: &credit, incompleteMessages: &allowance) == nil)
        #expect(sender.nextFragment(frameSpace: 8, newDataCredit: &credit, incompleteMessages: &allowance) == nil)
    }

    @Test("Without credit no new message starts, but retransmissions and a started message continue")
    func creditExhaustion() throws {
        var sender = SendChannel(channel: Self.channel)
        _ = try sender.enqueue(channelTestMessage(length: 600, seed: 4))
        _ = try sender.enqueue(channelTestMessage(length: 600, seed: 5))
        var allowance = IncompleteMessageAllowance()
        var credit: UInt64 = 1000
        #expect(sender.creditNeededForNextMessage == 600)
        let first = try #require(
            sender.nextFragment(maxDataLength: 400, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(first.range == 0..<400 && credit == 400, "the first fragment reserves the whole message")
        #expect(sender.creditNeededForNextMessage == nil)
        let rest = try #require(
            sender.nextFragment(maxDataLength: 400, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(rest.range == 400..<600 && credit == 400, "continuing a started message costs nothing")
        #expect(sender.creditNeededForNextMessage == 600)
        #expect(sender.nextFragment(maxDataLength: 1000, newDataCredit: &credit, incompleteMessages: &allowance) == nil)
        #expect(sender.hasNewData)

        credit = 0
        sender.onLost(first)
        let resent = try #require(
            sender.nextFragment(maxDataLength: 1000, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(resent.sequence.rawValue == 0 && resent.range == 0..<400 && credit == 0)
        #expect(sender.nextFragment(maxDataLength: 1000, newDataCredit: &credit, incompleteMessages: &allowance) == nil)

        credit = 600
        let second = try #require(
            sender.nextFragment(maxDataLength: 1000, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(second.sequence.rawValue == 1 && second.isWholeMessage && credit == 0)
    }

    @Test("Lost bytes are resent first, in new fragments, and never after they were acknowledged")
    func retransmissionOrderAndSpuriousLoss() throws {
        var sender = SendChannel(channel: Self.channel)
        let message = channelTestMessage(length: 3000, seed: 6)
        _ = try sender.enqueue(message)
        _ = try sender.enqueue([9, 9, 9])
        var allowance = IncompleteMessageAllowance()
        var credit = UInt64.max
        var records: [FragmentRecord] = []
        for _ in 0..<3 {
            records.append(
                try #require(
                    sender.nextFragment(maxDataLength: 1000, newDataCredit: &credit, incompleteMessages: &allowance)))
        }
        #expect(records.map(\.range) == [0..<1000, 1000..<2000, 2000..<3000])

        sender.onLost(records[0])
        sender.onLost(records[1])
        // The first loss was spurious: its acknowledgment arrives before anything was resent.
        sender.onAcknowledged(records[0], incompleteMessages: &allowance)
        let resent = try #require(
            sender.nextFragment(maxDataLength: 600, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(resent.sequence.rawValue == 0 && resent.range == 1000..<1600)
        // An acknowledgment covering part of what is still queued for resending removes that part.
        sender.onAcknowledged(
            FragmentRecord(
                channel: Self.channel, sequence: MessageSequence(0), offset: 1500, length: 500, totalLength: 3000),
            incompleteMessages: &allowance)
        let next = try #require(
            sender.nextFragment(maxDataLength: 600, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(next.sequence.rawValue == 1, "nothing of message 0 is left to resend: \(next)")
        #expect(!sender.hasDataToSend)

        // A loss is re-queued only for the bytes no other record got acknowledged.
        sender.onAcknowledged(records[2], incompleteMessages: &allowance)
        sender.onLost(records[1])
        let last = try #require(
            sender.nextFragment(maxDataLength: 600, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(last.range == 1000..<1500, "1500 ..< 2000 was acknowledged in another record")
        #expect(sender.nextFragment(maxDataLength: 600, newDataCredit: &credit, incompleteMessages: &allowance) == nil)
        sender.onAcknowledged(last, incompleteMessages: &allowance)
        #expect(sender.drainCompleted() == [0])
        #expect(allowance.inUse == 0)
        // A late acknowledgment of a completed message changes nothing.
        sender.onAcknowledged(resent, incompleteMessages: &allowance)
        #expect(sender.drainCompleted().isEmpty && allowance.inUse == 0)
        sender.onAcknowledged(next, incompleteMessages: &allowance)
        #expect(sender.drainCompleted() == [1] && sender.isIdle)
    }

    @Test("Under an allowance of 16, a 17th message cannot be split while 16 split messages are unacknowledged")
    func incompleteMessageAllowance() throws {
        var sender = SendChannel(channel: Self.channel)
        for index in 0..<17 { _ = try sender.enqueue(channelTestMessage(length: 200, seed: UInt64(index))) }
        _ = try sender.enqueue([1, 2, 3])
        #expect(IncompleteMessageAllowance().limit == ProtocolLimits.maxIncompleteMessagesPerConnection)
        var allowance = IncompleteMessageAllowance(limit: 16)
        var credit = UInt64.max
        var firstHalves: [FragmentRecord] = []
        for _ in 0..<32 {
            let record = try #require(
                sender.nextFragment(maxDataLength: 100, newDataCredit: &credit, incompleteMessages: &allowance))
            if record.offset == 0 { firstHalves.append(record) }
        }
        #expect(allowance.inUse == 16 && !allowance.hasRoom)
        #expect(sender.nextFragment(maxDataLength: 100, newDataCredit: &credit, incompleteMessages: &allowance) == nil)
        // The 17th message fits whole in a larger fragment: no slot needed.
        let whole = try #require(
            sender.nextFragment(maxDataLength: 200, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(whole.sequence.rawValue == 16 && whole.isWholeMessage && allowance.inUse == 16)
        // A lost whole message cannot be resent in pieces either while the allowance is used up, but the blocked
        // retransmission does not hold back a later message that fits whole.
        sender.onLost(whole)
        let small = try #require(
            sender.nextFragment(maxDataLength: 100, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(small.sequence.rawValue == 17 && small.isWholeMessage)
        #expect(sender.nextFragment(maxDataLength: 100, newDataCredit: &credit, incompleteMessages: &allowance) == nil)
        #expect(sender.hasRetransmissions)
        // Acknowledging only half of a split message keeps its slot.
        sender.onAcknowledged(firstHalves[0], incompleteMessages: &allowance)
        #expect(allowance.inUse == 16)
        #expect(sender.nextFragment(maxDataLength: 100, newDataCredit: &credit, incompleteMessages: &allowance) == nil)
        sender.onAcknowledged(
            FragmentRecord(
                channel: Self.channel, sequence: MessageSequence(0), offset: 100, length: 100, totalLength: 200),
            incompleteMessages: &allowance)
        #expect(allowance.inUse == 15)
        let split = try #require(
            sender.nextFragment(maxDataLength: 100, newDataCredit: &credit, incompleteMessages: &allowance))
        #expect(split.sequence.rawValue == 16 && split.range == 0..<100 && allowance.inUse == 16)
    }

    @Test("withFragment exposes exactly the record's bytes and fields")
    func withFragmentView() throws {
        var sender = SendChannel(channel: Self.channel)
        let message = channelTestMessage(length: 5000, seed: 8)
        _ = try sender.enqueue([])
        _ = try sender.enqueue(message)
        var allowance = IncompleteMessageAllowance()
        let records = Self.sendAll(&sender, maxDataLength: 1500, allowance: &allowance)
        #expect(records.count == 5)
        for record in records {
            sender.withFragment(for: record) { fragment in
                #expect(fragment.channel == Self.channel && fragment.sequence == record.sequence)
                #expect(fragment.offset == record.offset && fragment.totalLength == record.totalLength)
                let expected = record.sequence.rawValue == 0 ? [] : Array(message[record.range])
                #expect(Array(fragment.data) == expected)
                #expect((try? fragment.validate()) != nil)
            }
        }
    }
}
