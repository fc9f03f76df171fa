import HuddleProtocol
import HuddleWire
import Testing

/// Sender and receiver channels end to end: fragmentation, a faulty network, reassembly, acknowledgments.
@Suite("Channel round trips")
struct ChannelRoundTripTests {
    static let sizes = [0, 1, 1167, 1168, 65535, 262_144]

    /// The encoded MESSAGE frame length of `record`.
    static func frameLength(_ record: FragmentRecord) -> Int {
        MessageFragment.headerLength(
            channel: record.channel, sequence: record.sequence, offset: record.offset,
            totalLength: record.totalLength, dataLength: record.length) + record.length
    }

    @Test(
        "Sizes 0, 1, 1167, 1168, 65535 and 262144 arrive shuffled and duplicated: in order, once, byte-identical",
        arguments: 0..<UInt64(6))
    func shuffledAndDuplicated(seed: UInt64) throws {
        var random = ChannelTestRandom(seed: seed)
        let messages = Self.sizes.enumerated().map { channelTestMessage(length: $1, seed: seed &* 31 &+ UInt64($0)) }
        var sender = SendChannel(channel: ChannelID(9))
        for message in messages { _ = try sender.enqueue(message) }
        var allowance = IncompleteMessageAllowance()
        var credit = UInt64(messages.reduce(0) { $0 + $1.count })
        var records: [FragmentRecord] = []
        var fragments: [ChannelTestFragment] = []
        while let record = sender.nextFragment(frameSpace: 1168, newDataCredit: &credit, incompleteMessages: &allowance)
        {
            #expect(Self.frameLength(record) <= 1168)
            records.append(record)
            fragments.append(ChannelTestFragment(record, of: sender))
        }
        #expect(credit == 0 && !sender.hasDataToSend)
        // The fragments of each message tile it exactly.
        for (sequence, message) in messages.enumerated() {
            let pieces = records.filter { $0.sequence.rawValue == sequence }
            #expect(pieces.first?.offset == 0 && pieces.last?.range.upperBound == message.count)
            #expect(zip(pieces, pieces.dropFirst()).allSatisfy { $0.range.upperBound == $1.offset })
        }

        var arrivals = fragments + fragments.filter { _ in random.chance(30) }
        arrivals.shuffle(using: &random)
        var receiver = ReceiveChannel(channel: ChannelID(9))
        var budget = ReassemblyBudget()
        var delivered: [[UInt8]] = []
        for fragment in arrivals {
            try receiver.receive(fragment, budget: &budget)
            delivered += receiver.drainDelivered()
        }
        #expect(delivered.count == messages.count)
        #expect(delivered == messages)
        #expect(budget.bufferedBytes == 0 && budget.incompleteMessages == 0 && receiver.bufferedMessages == 0)

        records.shuffle(using: &random)
        for record in records { sender.onAcknowledged(record, incompleteMessages: &allowance) }
        #expect(sender.drainCompleted().sorted() == Array(0..<UInt64(messages.count)))
        #expect(sender.isIdle && sender.queuedBytes == 0 && allowance.inUse == 0)
    }

    /// A packet: the records the sender keeps and the fragments the network carries.
    struct Packet {
        var records: [FragmentRecord] = []
        var fragments: [ChannelTestFragment] = []
    }

    @Test(
        "Seeded loss, duplication, reordering, late and lost ACKs on three channels: all delivered once, in order (N5, N6)",
        arguments: 0..<UInt64(12))
    func lossyNetwork(seed: UInt64) throws {
        var random = ChannelTestRandom(seed: seed &+ 1000)
        let channels = [ChannelID(0), ChannelID(1), ChannelID(7)]
        func slot(_ channel: ChannelID) -> Int { channels.firstIndex(of: channel)! }
        var senders = channels.map { SendChannel(channel: $0) }
        var receivers = channels.map { ReceiveChannel(channel: $0) }
        var allowance = IncompleteMessageAllowance()
        var budget = ReassemblyBudget()
        budget.flowControlLimit = budget.largestSafeFlowControlLimit
        var peerMaxData = budget.flowControlLimit
        var consumed: UInt64 = 0

        // Mostly multi-fragment messages, so the incomplete-message allowance is exercised under loss.
        var expected: [[[UInt8]]] = []
        for channelIndex in channels.indices {
            expected.append(
                (0..<60).map { index in
                    let length: Int
                    switch Int.random(in: 0..<20, using: &random) {
                    case 0: length = 0
                    case 1: length = Self.sizes.randomElement(using: &random)!
                    case 2...7: length = Int.random(in: 1...1200, using: &random)
                    default: length = Int.random(in: 1201...9000, using: &random)
                    }
                    return channelTestMessage(length: length, seed: seed << 16 | UInt64(channelIndex << 8 | index))
                })
        }
        var toEnqueue = expected.map { ArraySlice($0) }
        var delivered: [[[UInt8]]] = channels.map { _ in [] }
        var delayed: [Packet] = []
        var sentBytes = 0
        var rounds = 0

        while rounds < 20_000 {
            rounds += 1
            for index in channels.indices {
                while let message = toEnqueue[index].first, (try? senders[index].enqueue(message)) != nil {
                    toEnqueue[index].removeFirst()
                }
            }
            var flight: [Packet] = []
            for packetIndex in 0..<24 {
                var space = random.chance(25) ? Int.random(in: 12...400, using: &random) : 1168
                var credit = peerMaxData - consumed
                var packet = Packet()
                for offset in channels.indices {
                    let index = (offset + packetIndex + rounds) % channels.count
                    while let record = senders[index].nextFragment(
                        frameSpace: space, newDataCredit: &credit, incompleteMessages: &allowance)
                    {
                        space -= Self.frameLength(record)
                        sentBytes += record.length
                        packet.records.append(record)
                        packet.fragments.append(ChannelTestFragment(record, of: senders[index]))
                    }
                }
                consumed = peerMaxData - credit
                if !packet.records.isEmpty { flight.append(packet) }
            }

            var arrivals = delayed.flatMap(\.fragments)
            var acknowledged = delayed.flatMap(\.records)
            var lost: [FragmentRecord] = []
            delayed = []
            for packet in flight {
                if random.chance(15) {
                    lost += packet.records
                } else if random.chance(10) {
                    // Declared lost now, delivered and acknowledged next round (a spurious loss).
                    lost += packet.records
                    delayed.append(packet)
                } else {
                    arrivals += packet.fragments
                    if random.chance(15) { arrivals += packet.fragments }
                    if random.chance(10) { lost += packet.records } else { acknowledged += packet.records }
                }
            }
            arrivals.shuffle(using: &random)
            for fragment in arrivals {
                let index = slot(fragment.channel)
                try receivers[index].receive(fragment, budget: &budget)
                delivered[index] += receivers[index].drainDelivered()
            }
            #expect(budget.incompleteMessages <= allowance.inUse, "the allowance over-approximates the peer")
            budget.flowControlLimit = budget.largestSafeFlowControlLimit
            peerMaxData = budget.flowControlLimit

            lost.shuffle(using: &random)
            acknowledged.shuffle(using: &random)
            for record in lost { senders[slot(record.channel)].onLost(record) }
            for record in acknowledged {
                senders[slot(record.channel)].onAcknowledged(record, incompleteMessages: &allowance)
            }
            if senders.allSatisfy(\.isIdle), toEnqueue.allSatisfy(\.isEmpty), delayed.isEmpty { break }
        }

        #expect(rounds < 20_000, "seed \(seed): no progress")
        for index in channels.indices {
            #expect(delivered[index].count == expected[index].count, "seed \(seed), channel \(channels[index])")
            #expect(delivered[index] == expected[index], "seed \(seed), channel \(channels[index])")
            #expect(senders[index].drainCompleted().sorted() == Array(0..<UInt64(expected[index].count)))
        }
        let payload = expected.joined().reduce(0) { $0 + $1.count }
        #expect(sentBytes > payload, "seed \(seed): the network lost nothing, so retransmission went untested")
        #expect(allowance.inUse == 0 && budget.bufferedBytes == 0 && budget.incompleteMessages == 0)
        #expect(budget.admittedBytes == UInt64(payload) && consumed == UInt64(payload))
    }

    @Test(
        "Random overlapping cuts in random order reassemble exactly (a naive-model check of reassembly)",
        arguments: 0..<UInt64(10))
    func randomOverlappingCuts(seed: UInt64) throws {
        var random = ChannelTestRandom(seed: seed &+ 77)
        let messages = (0..<12).map { index in
            channelTestMessage(length: Int.random(in: 0...5000, using: &random), seed: seed << 8 | UInt64(index))
        }
        var fragments: [ChannelTestFragment] = []
        for (sequence, message) in messages.enumerated() {
            var offset = 0
            repeat {
                let length = min(message.count - offset, Int.random(in: 1...300, using: &random))
                fragments.append(
                    ChannelTestFragment(
                        sequence: UInt64(sequence), offset: offset, totalLength: message.count,
                        data: Array(message[offset..<offset + length])))
                offset += length
            } while offset < message.count
            for _ in 0..<(message.count / 200) {
                let start = Int.random(in: 0..<message.count, using: &random)
                let end = Int.random(in: start...min(message.count, start + 400), using: &random)
                fragments.append(
                    ChannelTestFragment(
                        sequence: UInt64(sequence), offset: start, totalLength: message.count,
                        data: Array(message[start..<end])))
            }
        }
        fragments.shuffle(using: &random)
        var receiver = ReceiveChannel(channel: ChannelID(0))
        var budget = ReassemblyBudget()
        var delivered: [[UInt8]] = []
        for fragment in fragments {
            try receiver.receive(fragment, budget: &budget)
            delivered += receiver.drainDelivered()
        }
        #expect(delivered == messages, "seed \(seed)")
        #expect(budget.bufferedBytes == 0 && budget.incompleteMessages == 0)
    }
}
