import HuddleProtocol
import HuddleWire

/// SplitMix64: a small deterministic generator, so every shuffled or lossy run replays from its seed.
struct ChannelTestRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// `true` with probability `percent` / 100.
    mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &self) < percent
    }
}

/// Deterministic, position- and seed-dependent message bytes (so swapped or shifted bytes are detected).
func channelTestMessage(length: Int, seed: UInt64) -> [UInt8] {
    var random = ChannelTestRandom(seed: seed &* 0x1000_0001 &+ UInt64(length))
    return (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
}

/// A MESSAGE frame as it travels in a packet: the fields and its own copy of the bytes.
struct ChannelTestFragment: Sendable {
    var channel: ChannelID
    var sequence: UInt64
    var offset: Int
    var totalLength: Int
    var data: [UInt8]

    init(channel: ChannelID = ChannelID(0), sequence: UInt64, offset: Int, totalLength: Int, data: [UInt8]) {
        self.channel = channel
        self.sequence = sequence
        self.offset = offset
        self.totalLength = totalLength
        self.data = data
    }

    /// The fragment `record` of `sender`, with its bytes copied out as the encoder would.
    init(_ record: FragmentRecord, of sender: SendChannel) {
        self.init(
            channel: record.channel, sequence: record.sequence.rawValue, offset: record.offset,
            totalLength: record.totalLength, data: Array(sender.data(for: record)!))
    }
}

extension ReceiveChannel {
    /// Feeds a test fragment through the borrowed-bytes API, as the frame decoder would.
    mutating func receive(_ fragment: ChannelTestFragment, budget: inout ReassemblyBudget) throws(ProtocolError) {
        var failure: ProtocolError?
        fragment.data.withUnsafeBytes { raw in
            let frame = MessageFragment(
                channel: fragment.channel, sequence: MessageSequence(fragment.sequence), offset: fragment.offset,
                totalLength: fragment.totalLength, data: raw)
            do throws(ProtocolError) {
                try receive(frame, budget: &budget)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Polls until nothing is deliverable.
    mutating func drainDelivered() -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while let message = pollDelivered() { messages.append(message) }
        return messages
    }
}

extension SendChannel {
    /// Polls until no completion is left.
    mutating func drainCompleted() -> [UInt64] {
        var sequences: [UInt64] = []
        while let (sequence, _) = pollCompleted() { sequences.append(sequence.rawValue) }
        return sequences
    }
}
