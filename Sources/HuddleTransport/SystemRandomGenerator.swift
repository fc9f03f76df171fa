import HuddleCrypto

/// Random bytes from the operating system's CSPRNG (`getrandom` on Linux, through the standard library's
/// `SystemRandomNumberGenerator`). Only the layers above the sans-IO core use it: to seed the endpoint's
/// ``ChaChaRandomGenerator`` and to draw session and invitation secrets. The protocol core never touches it.
public struct SystemRandomGenerator: RandomBytesGenerator {
    private var system = SystemRandomNumberGenerator()

    /// A generator reading the system CSPRNG.
    public init() {}

    /// Fills `buffer` with random bytes.
    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < buffer.count {
            var word = system.next()
            let take = min(8, buffer.count - offset)
            withUnsafeBytes(of: &word) { bytes in
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + take)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<take]))
            }
            offset += take
        }
    }

    /// A protocol generator seeded with 32 fresh bytes from the system CSPRNG.
    public static func seededProtocolGenerator() -> ChaChaRandomGenerator {
        var system = SystemRandomGenerator()
        // 32 bytes is exactly the seed length the generator requires, so this cannot fail.
        return try! ChaChaRandomGenerator(seed: system.bytes(count: 32))
    }
}
