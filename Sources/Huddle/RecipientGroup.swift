import HuddleCrypto

/// The recipients of a message, numbered: what a receipt keeps of them, shared by every message to the same
/// participants (a session's "everyone else" is built once per change of its participants, not per send).
final class RecipientGroup: Sendable {
    /// Nobody.
    static let empty = RecipientGroup([])

    /// The recipients.
    let participants: Set<Participant>
    /// The recipients in number order.
    let members: [Participant]
    /// Each recipient's number, by static key.
    let numbers: [X25519PublicKey: Int]

    /// The number of the member whose static key is `key`. A small group is scanned (comparing keys is cheaper than
    /// hashing 32 bytes, and this runs once per confirmed message); a large one is looked up.
    func number(of key: X25519PublicKey) -> Int? {
        guard members.count > 8 else { return members.firstIndex { $0.staticKey == key } }
        return numbers[key]
    }

    /// A group of `participants`.
    init(_ participants: Set<Participant>) {
        self.participants = participants
        members = Array(participants)
        numbers = Dictionary(uniqueKeysWithValues: members.enumerated().map { ($1.staticKey, $0) })
    }
}

/// Which members of a ``RecipientGroup`` are still to be heard from: a bit per member, inline for groups of up to
/// 64 (no allocation per message), in further words beyond.
struct RecipientMask {
    private var low: UInt64
    private var high: [UInt64]

    /// Every member of a group of `count` set.
    init(count: Int) {
        low = count >= 64 ? .max : (1 << UInt64(count)) &- 1
        high = []
        var left = count - 64
        while left > 0 {
            high.append(left >= 64 ? .max : (1 << UInt64(left)) &- 1)
            left -= 64
        }
    }

    /// Whether no member is set.
    var isEmpty: Bool { low == 0 && high.allSatisfy { $0 == 0 } }

    /// Clears member `number`; whether it was set.
    mutating func remove(_ number: Int) -> Bool {
        let bit = UInt64(1) << UInt64(number % 64)
        if number < 64 {
            defer { low &= ~bit }
            return low & bit != 0
        }
        let word = number / 64 - 1
        defer { high[word] &= ~bit }
        return high[word] & bit != 0
    }

    /// The members set, ascending.
    var members: [Int] {
        var result: [Int] = []
        for (index, word) in ([low] + high).enumerated() {
            var bits = word
            while bits != 0 {
                result.append(index * 64 + bits.trailingZeroBitCount)
                bits &= bits - 1
            }
        }
        return result
    }
}
