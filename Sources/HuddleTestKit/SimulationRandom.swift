import HuddleCrypto

/// The simulator's single source of randomness: the ChaCha20 keystream under the run's seed, plus the few
/// distributions the fault model needs. Every random decision in a run comes from here, in a fixed order, so a
/// seed reproduces a run exactly.
public struct SimulationRandom: RandomBytesGenerator, Sendable {
    private var generator: ChaChaRandomGenerator

    /// A generator for `seed`.
    public init(seed: UInt64) {
        generator = ChaChaRandomGenerator(seed: seed)
    }

    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        generator.fill(buffer)
    }

    /// A uniform value in `0..<1`.
    public mutating func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// `true` with probability `probability`.
    public mutating func chance(_ probability: Double) -> Bool {
        probability > 0 && unit() < probability
    }

    /// A uniform duration in `0..<upper` (zero when `upper` is not positive).
    public mutating func duration(below upper: Duration) -> Duration {
        let nanoseconds = upper.nanoseconds
        guard nanoseconds > 0 else { return .zero }
        return .nanoseconds(Int64(next() % UInt64(nanoseconds)))
    }

    /// A uniform integer in `range`.
    public mutating func integer(in range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &self)
    }
}
