import HuddleProtocol
import HuddleWire
import Testing

@Suite("Receive channel")
struct ReceiveChannelTests {
    static let channel = ChannelID(0)

    static func violation(_ violation: ProtocolViolation) -> ProtocolError { .protocolViolation(violation) }

    /// Only the last `length` bytes of message `sequence` of `totalLength` bytes, on `channel`.
    static func lastFragment(
        channel: ChannelID = channel, sequence: UInt64, totalLength: Int, length: Int = 1
    ) -> ChannelTestFragment {
        ChannelTestFragment(
            channel: channel, sequence: sequence, offset: totalLength - length, totalLength: totalLength,
            data: [UInt8](repeating: 0xAB, count: length))
    }

    @Test("In-order whole messages are delivered at once, without touching the byte budget (fast path)")
    func fastPath() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        let messages = [[], [1], channelTestMessage(length: 1168, seed: 1)]
        for (sequence, message) in messages.enumerated() {
            try receiver.receive(
                ChannelTestFragment(sequence: UInt64(sequence), offset: 0, totalLength: message.count, data: message),
                budget: &budget)
            #expect(budget.bufferedBytes == 0 && receiver.bufferedBytes == 0 && receiver.bufferedMessages == 0)
        }
        #expect(receiver.nextSequenceToDeliver.rawValue == 0)
        #expect(receiver.drainDelivered() == messages)
        #expect(receiver.nextSequenceToDeliver.rawValue == 3)
        #expect(budget.admittedBytes == 1169 && budget.releasedBytes == 1169)
        #expect(receiver.pollDelivered() == nil)
    }

    @Test("A total length of exactly 256 KiB is accepted; 256 KiB + 1 is refused before allocating (F4)")
    func totalLengthLimit() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        #expect(throws: Self.violation(.fragmentOutOfBounds(channel: 0, sequence: 1))) {
            try receiver.receive(
                Self.lastFragment(sequence: 1, totalLength: WireLimits.maxMessageSize + 1), budget: &budget)
        }
        #expect(budget.bufferedBytes == 0 && budget.admittedBytes == 0 && receiver.bufferedMessages == 0)
        try receiver.receive(Self.lastFragment(sequence: 1, totalLength: WireLimits.maxMessageSize), budget: &budget)
        #expect(budget.bufferedBytes == WireLimits.maxMessageSize && budget.incompleteMessages == 1)
    }

    @Test("Fragments reaching past their message are fragmentOutOfBounds (F5)")
    func fragmentBounds() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        let cases = [
            ChannelTestFragment(sequence: 0, offset: 5, totalLength: 10, data: [UInt8](repeating: 1, count: 6)),
            ChannelTestFragment(sequence: 0, offset: 11, totalLength: 10, data: []),
            ChannelTestFragment(sequence: 0, offset: -1, totalLength: 10, data: [1]),
            ChannelTestFragment(sequence: 0, offset: 0, totalLength: -1, data: []),
            ChannelTestFragment(sequence: 0, offset: 0, totalLength: 0, data: [1]),
        ]
        for fragment in cases {
            #expect(throws: Self.violation(.fragmentOutOfBounds(channel: 0, sequence: 0))) {
                try receiver.receive(fragment, budget: &budget)
            }
        }
        // Even for an already delivered sequence: the bounds check comes first.
        try receiver.receive(ChannelTestFragment(sequence: 0, offset: 0, totalLength: 1, data: [7]), budget: &budget)
        #expect(throws: Self.violation(.fragmentOutOfBounds(channel: 0, sequence: 0))) {
            try receiver.receive(
                ChannelTestFragment(sequence: 0, offset: 1, totalLength: 1, data: [7]), budget: &budget)
        }
        #expect(budget.admittedBytes == 1 && receiver.drainDelivered() == [[7]])
    }

    @Test("A total length that disagrees with earlier fragments is fragmentOutOfBounds and changes nothing")
    func totalLengthMismatch() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        let message = channelTestMessage(length: 100, seed: 2)
        try receiver.receive(
            ChannelTestFragment(sequence: 0, offset: 0, totalLength: 100, data: Array(message[0..<40])),
            budget: &budget)
        #expect(throws: Self.violation(.fragmentOutOfBounds(channel: 0, sequence: 0))) {
            try receiver.receive(
                ChannelTestFragment(sequence: 0, offset: 40, totalLength: 101, data: Array(message[40..<100])),
                budget: &budget)
        }
        #expect(receiver.pollDelivered() == nil && budget.incompleteMessages == 1 && budget.bufferedBytes == 100)
        try receiver.receive(
            ChannelTestFragment(sequence: 0, offset: 40, totalLength: 100, data: Array(message[40..<100])),
            budget: &budget)
        #expect(receiver.drainDelivered() == [message])
        #expect(budget.incompleteMessages == 0 && budget.bufferedBytes == 0)
    }

    @Test("A sequence 1024 ahead is accepted, 1025 ahead is sequenceGapTooLarge; a 2^32 jump too (D9)")
    func sequenceGap() throws {
        #expect(ProtocolLimits.maxMessageSequenceGap == 1024)
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        #expect(throws: Self.violation(.sequenceGapTooLarge(channel: 0, sequence: 1025, next: 0))) {
            try receiver.receive(Self.lastFragment(sequence: 1025, totalLength: 1), budget: &budget)
        }
        #expect(throws: Self.violation(.sequenceGapTooLarge(channel: 0, sequence: 1 << 32, next: 0))) {
            try receiver.receive(Self.lastFragment(sequence: 1 << 32, totalLength: 1), budget: &budget)
        }
        #expect(budget.admittedBytes == 0 && receiver.bufferedMessages == 0)
        try receiver.receive(Self.lastFragment(sequence: 1024, totalLength: 1), budget: &budget)
        // The window moves with delivery: once 0 is complete, 1025 is within reach.
        try receiver.receive(Self.lastFragment(sequence: 0, totalLength: 1), budget: &budget)
        try receiver.receive(Self.lastFragment(sequence: 1025, totalLength: 1), budget: &budget)
        #expect(throws: Self.violation(.sequenceGapTooLarge(channel: 0, sequence: 1026, next: 1))) {
            try receiver.receive(Self.lastFragment(sequence: 1026, totalLength: 1), budget: &budget)
        }
        #expect(receiver.drainDelivered().count == 1 && receiver.bufferedMessages == 2)
    }

    @Test("256 messages open with only their last fragment fill 2 MiB; a 257th is refused (D7)")
    func fullIncompleteBudget() throws {
        #expect(ProtocolLimits.maxIncompleteMessagesPerConnection == 256)
        #expect(ProtocolLimits.maxReassemblyBytesPerConnection == 2 * 1024 * 1024)
        // Two channels of one connection share the budget.
        var first = ReceiveChannel(channel: ChannelID(1))
        var second = ReceiveChannel(channel: ChannelID(2))
        var budget = ReassemblyBudget()
        for sequence in 0..<UInt64(128) {
            try first.receive(
                Self.lastFragment(channel: ChannelID(1), sequence: sequence, totalLength: 8192, length: 1168),
                budget: &budget)
            try second.receive(
                Self.lastFragment(channel: ChannelID(2), sequence: sequence, totalLength: 8192, length: 1168),
                budget: &budget)
        }
        #expect(budget.incompleteMessages == 256 && budget.bufferedBytes == 2 * 1024 * 1024)
        #expect(first.bufferedBytes + second.bufferedBytes == budget.bufferedBytes)
        #expect(throws: Self.violation(.reassemblyBudgetExceeded(limit: 256))) {
            try first.receive(
                Self.lastFragment(channel: ChannelID(1), sequence: 128, totalLength: 2), budget: &budget)
        }
        #expect(throws: Self.violation(.reassemblyBudgetExceeded(limit: 2 * 1024 * 1024))) {
            try first.receive(
                Self.lastFragment(channel: ChannelID(1), sequence: 128, totalLength: 1), budget: &budget)
        }
        #expect(budget.incompleteMessages == 256 && budget.bufferedBytes == 2 * 1024 * 1024)
        // A fragment of an already open message still goes in.
        try first.receive(
            Self.lastFragment(channel: ChannelID(1), sequence: 3, totalLength: 8192, length: 2000),
            budget: &budget)
        #expect(budget.incompleteMessages == 256)
    }

    @Test("The 257th incomplete tiny message is refused even with bytes to spare")
    func incompleteCountLimit() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        for sequence in 0..<UInt64(256) {
            try receiver.receive(Self.lastFragment(sequence: sequence, totalLength: 2), budget: &budget)
        }
        #expect(budget.incompleteMessages == 256 && budget.bufferedBytes == 512)
        #expect(throws: Self.violation(.reassemblyBudgetExceeded(limit: 256))) {
            try receiver.receive(Self.lastFragment(sequence: 256, totalLength: 2), budget: &budget)
        }
        // Whole messages are not incomplete: they still fit.
        try receiver.receive(Self.lastFragment(sequence: 256, totalLength: 2, length: 2), budget: &budget)
        // Completing message 0 frees a slot.
        try receiver.receive(
            ChannelTestFragment(sequence: 0, offset: 0, totalLength: 2, data: [0xAB]), budget: &budget)
        #expect(budget.incompleteMessages == 255)
        try receiver.receive(Self.lastFragment(sequence: 257, totalLength: 2), budget: &budget)
        #expect(budget.incompleteMessages == 256)
        #expect(receiver.drainDelivered() == [[0xAB, 0xAB]])
    }

    @Test("Exactly 2 MiB of complete out-of-order messages is buffered; one byte more is refused; delivery frees it")
    func byteBudget() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        let big = channelTestMessage(length: WireLimits.maxMessageSize, seed: 3)
        for sequence in 1...UInt64(8) {
            try receiver.receive(
                ChannelTestFragment(sequence: sequence, offset: 0, totalLength: big.count, data: big), budget: &budget)
        }
        #expect(budget.bufferedBytes == 2 * 1024 * 1024 && budget.incompleteMessages == 0)
        #expect(receiver.bufferedBytes == 2 * 1024 * 1024 && receiver.pollDelivered() == nil)
        #expect(throws: Self.violation(.reassemblyBudgetExceeded(limit: 2 * 1024 * 1024))) {
            try receiver.receive(
                ChannelTestFragment(sequence: 9, offset: 0, totalLength: 1, data: [1]), budget: &budget)
        }
        #expect(throws: Self.violation(.reassemblyBudgetExceeded(limit: 2 * 1024 * 1024))) {
            try receiver.receive(
                ChannelTestFragment(sequence: 0, offset: 0, totalLength: 1, data: [1]), budget: &budget)
        }
        // An empty message costs no bytes.
        try receiver.receive(ChannelTestFragment(sequence: 9, offset: 0, totalLength: 0, data: []), budget: &budget)
        #expect(budget.largestSafeFlowControlLimit == UInt64(2 * 1024 * 1024))
        // Message 0 arrives once there is room: everything becomes deliverable and the budget is released.
        var roomy = ReassemblyBudget(maxIncompleteMessages: 16, maxBytes: 2 * 1024 * 1024 + 1)
        var fresh = ReceiveChannel(channel: Self.channel)
        for sequence in 1...UInt64(8) {
            try fresh.receive(
                ChannelTestFragment(sequence: sequence, offset: 0, totalLength: big.count, data: big), budget: &roomy)
        }
        try fresh.receive(ChannelTestFragment(sequence: 0, offset: 0, totalLength: 1, data: [1]), budget: &roomy)
        #expect(roomy.bufferedBytes == 0 && fresh.bufferedBytes == 0 && fresh.bufferedMessages == 0)
        #expect(roomy.releasedBytes == UInt64(8 * big.count + 1))
        let delivered = fresh.drainDelivered()
        #expect(delivered.count == 9 && delivered[0] == [1] && delivered.dropFirst().allSatisfy { $0 == big })
    }

    @Test("Overlapping fragments with different bytes are inconsistentFragmentData; identical overlaps are fine (F5)")
    func overlaps() throws {
        let message = channelTestMessage(length: 300, seed: 4)
        var tampered = message
        tampered[150] ^= 0x01
        func piece(_ range: Range<Int>, of bytes: [UInt8], sequence: UInt64 = 0) -> ChannelTestFragment {
            ChannelTestFragment(
                sequence: sequence, offset: range.lowerBound, totalLength: 300, data: Array(bytes[range]))
        }

        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        try receiver.receive(piece(100..<200, of: message), budget: &budget)
        #expect(throws: Self.violation(.inconsistentFragmentData(channel: 0, sequence: 0))) {
            try receiver.receive(piece(0..<151, of: tampered), budget: &budget)
        }
        #expect(throws: Self.violation(.inconsistentFragmentData(channel: 0, sequence: 0))) {
            try receiver.receive(piece(150..<300, of: tampered), budget: &budget)
        }
        // Overlaps that agree are fine (this piece stops just before the tampered byte).
        try receiver.receive(piece(0..<150, of: tampered), budget: &budget)
        try receiver.receive(piece(50..<250, of: message), budget: &budget)
        try receiver.receive(piece(250..<300, of: message), budget: &budget)
        #expect(receiver.drainDelivered() == [message])

        // A complete message still waiting for an earlier one is checked too.
        try receiver.receive(piece(0..<300, of: message, sequence: 2), budget: &budget)
        #expect(throws: Self.violation(.inconsistentFragmentData(channel: 0, sequence: 2))) {
            try receiver.receive(piece(140..<160, of: tampered, sequence: 2), budget: &budget)
        }
        try receiver.receive(piece(140..<160, of: message, sequence: 2), budget: &budget)
        #expect(receiver.bufferedMessages == 1 && budget.bufferedBytes == 300)
    }

    @Test("Duplicates of delivered and of buffered data are ignored (N5)")
    func duplicates() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        let message = channelTestMessage(length: 50, seed: 5)
        let whole = ChannelTestFragment(sequence: 0, offset: 0, totalLength: 50, data: message)
        try receiver.receive(whole, budget: &budget)
        try receiver.receive(whole, budget: &budget)
        #expect(receiver.drainDelivered() == [message])
        try receiver.receive(whole, budget: &budget)
        #expect(receiver.pollDelivered() == nil)
        let half = ChannelTestFragment(sequence: 2, offset: 0, totalLength: 50, data: Array(message[0..<25]))
        try receiver.receive(half, budget: &budget)
        try receiver.receive(half, budget: &budget)
        #expect(budget.incompleteMessages == 1 && budget.admittedBytes == 100 && budget.bufferedBytes == 50)
        #expect(receiver.pollDelivered() == nil)
    }

    @Test("The flow-control limit counts total lengths of admitted messages")
    func flowControl() throws {
        var receiver = ReceiveChannel(channel: Self.channel)
        var budget = ReassemblyBudget()
        budget.flowControlLimit = 100
        try receiver.receive(Self.lastFragment(sequence: 0, totalLength: 60), budget: &budget)
        try receiver.receive(Self.lastFragment(sequence: 1, totalLength: 40, length: 40), budget: &budget)
        #expect(throws: Self.violation(.flowControlExceeded(limit: 100))) {
            try receiver.receive(Self.lastFragment(sequence: 2, totalLength: 1), budget: &budget)
        }
        // More fragments of admitted messages need no credit.
        try receiver.receive(
            ChannelTestFragment(sequence: 0, offset: 0, totalLength: 60, data: [UInt8](repeating: 0xAB, count: 59)),
            budget: &budget)
        #expect(receiver.drainDelivered().count == 2)
        #expect(budget.admittedBytes == 100 && budget.releasedBytes == 100)
        budget.flowControlLimit = budget.largestSafeFlowControlLimit
        try receiver.receive(Self.lastFragment(sequence: 2, totalLength: 1, length: 1), budget: &budget)
    }
}
