import HuddleCrypto

/// Random bytes from the operating system's CSPRNG (`getrandom` on Linux, through the standard library's
/// `SystemRandomNumberGenerator`). Only executables and the transport layer may use it; the sans-IO modules take a
/// generator as a parameter instead.
struct SystemRandomGenerator: RandomBytesGenerator {
    private var system = SystemRandomNumberGenerator()

    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
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
}
