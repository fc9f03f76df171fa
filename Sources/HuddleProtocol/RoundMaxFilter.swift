/// The largest value seen over the last few round trips (BBR's windowed max filters for bandwidth and ACK
/// aggregation): one entry per round that had a sample, entries older than ``rounds`` rounds dropped when a new
/// value arrives.
struct RoundMaxFilter<Value: Comparable & Sendable>: Sendable {
    /// How many rounds a value is remembered, counting the current one.
    let rounds: Int
    /// The largest remembered value, `nil` before the first.
    private(set) var maximum: Value?
    private var entries: [(round: Int, value: Value)] = []

    /// An empty filter remembering `rounds` rounds.
    init(rounds: Int) {
        self.rounds = rounds
    }

    /// Folds in `value`, seen in round `round` (rounds never go backwards).
    mutating func update(_ value: Value, round: Int) {
        let expired = round - rounds
        entries.removeAll { $0.round <= expired }
        if let last = entries.last, last.round == round {
            entries[entries.count - 1].value = max(last.value, value)
        } else {
            entries.append((round, value))
        }
        maximum = entries.first.map { first in entries.dropFirst().reduce(first.value) { max($0, $1.value) } }
    }
}
