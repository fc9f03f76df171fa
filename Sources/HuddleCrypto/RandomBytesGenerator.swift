/// A source of random bytes, injected wherever HuddleCrypto needs randomness.
///
/// HuddleCrypto never reads the operating system's random number generator itself: production code passes a
/// generator backed by the system CSPRNG (from the transport layer), tests and the simulator pass a seeded
/// ``ChaChaRandomGenerator`` so every run is reproducible. Conforming types are also `RandomNumberGenerator`s, so
/// they work with `Int.random(in:using:)`.
public protocol RandomBytesGenerator: RandomNumberGenerator {
    /// Fills `buffer` completely with random bytes.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

extension RandomBytesGenerator {
    /// Returns 64 random bits.
    public mutating func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }

    /// Returns `count` random bytes.
    public mutating func bytes(count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { fill($0) }
        return result
    }
}
