import HuddleCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Random bytes from the operating system's CSPRNG (`getrandom(2)` on Linux, elsewhere the standard library's
/// `SystemRandomNumberGenerator`). Only the layers above the sans-IO core use it: to seed the endpoint's
/// ``ChaChaRandomGenerator`` and to draw session and invitation secrets. The protocol core never touches it.
public struct SystemRandomGenerator: RandomBytesGenerator {
    private var system = SystemRandomNumberGenerator()

    /// A generator reading the system CSPRNG.
    public init() {}

    /// Fills `buffer` with random bytes.
    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        #if canImport(Glibc)
            // Large requests read /dev/urandom (the same CSPRNG as getrandom, which the Glibc module does not
            // export) in a few system calls instead of one per 8 bytes. If it cannot be read, the standard
            // library's generator below fills the rest.
            if buffer.count > 256, let base = buffer.baseAddress {
                let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
                if descriptor >= 0 {
                    defer { close(descriptor) }
                    while offset < buffer.count {
                        let count = read(descriptor, base + offset, buffer.count - offset)
                        if count > 0 {
                            offset += count
                        } else if count == 0 || errno != EINTR {
                            break
                        }
                    }
                }
            }
        #endif
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
