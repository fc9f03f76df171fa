import CSodium

/// A deterministic random byte generator: the ChaCha20 keystream under a 32-byte seed.
///
/// Given the same seed it produces the same bytes on every platform, which is what makes simulator runs replayable.
/// Seeded from a secret, unpredictable source it is a sound CSPRNG; seeded from a test seed it is predictable by
/// design. Each refill uses a fresh nonce, so no keystream block is ever produced twice by one generator.
///
/// Like every value-type generator, a copy continues the same stream: never copy a generator that produces keys.
public struct ChaChaRandomGenerator: RandomBytesGenerator, Sendable {
    private static let blockBytes = 512
    private let seed: SecureBytes
    private var nonceCounter: UInt64 = 0
    private var buffer: [UInt8]
    private var position: Int

    /// Creates a generator from a 32-byte seed.
    public init(seed: [UInt8]) throws {
        guard seed.count == 32 else {
            throw CryptoError.invalidLength(what: "random generator seed", expected: 32, actual: seed.count)
        }
        Sodium.initialize()
        self.seed = SecureBytes(seed)
        self.buffer = [UInt8](repeating: 0, count: Self.blockBytes)
        self.position = Self.blockBytes
    }

    /// Creates a generator from a 64-bit test seed (expanded with BLAKE2b so nearby seeds give unrelated streams).
    public init(seed: UInt64) {
        var seedBytes = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { seedBytes[index] = UInt8(truncatingIfNeeded: seed >> (8 * UInt64(index))) }
        let expanded = BLAKE2b.hash(seedBytes, outputLength: 32)
        // The expanded seed is always 32 bytes, so this cannot fail.
        try! self.init(seed: expanded)
    }

    public mutating func fill(_ target: UnsafeMutableRawBufferPointer) {
        var written = 0
        while written < target.count {
            if position == Self.blockBytes { refill() }
            let take = min(Self.blockBytes - position, target.count - written)
            buffer.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: target[written..<(written + take)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + take)]))
            }
            position += take
            written += take
        }
    }

    private mutating func refill() {
        var nonce = [UInt8](repeating: 0, count: 12)
        for index in 0..<8 { nonce[4 + index] = UInt8(truncatingIfNeeded: nonceCounter >> (8 * UInt64(index))) }
        nonceCounter += 1
        let count = buffer.count
        seed.withUnsafeBytes { key in
            buffer.withUnsafeMutableBytes { out in
                let status = crypto_stream_chacha20_ietf(out.mutableBytePointer, UInt64(count), nonce, key.bytePointer)
                precondition(status == 0, "crypto_stream_chacha20_ietf failed")
            }
        }
        position = 0
    }
}
