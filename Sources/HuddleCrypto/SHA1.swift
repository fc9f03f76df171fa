/// SHA-1 (FIPS 180-4), one-shot: only for STUN's MESSAGE-INTEGRITY (HMAC-SHA1, RFC 8489 14.5), which every TURN
/// server speaks. SHA-1 is broken for collision resistance; HMAC-SHA1 is not (RFC 6194), and nothing else in Huddle
/// uses it. libsodium has no SHA-1, and a second crypto library for 60 lines was judged not worth its build time.
public enum SHA1 {
    /// The digest length in bytes.
    public static let digestLength = 20
    /// The block length in bytes.
    public static let blockLength = 64

    /// The SHA-1 digest of `message`.
    public static func hash(_ message: some Sequence<UInt8>) -> [UInt8] {
        var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (
            0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0
        )
        let padded = MessagePadding.padded(Array(message), lengthBigEndian: true)
        var words = [UInt32](repeating: 0, count: 80)
        for blockStart in stride(from: 0, to: padded.count, by: blockLength) {
            for index in 0..<16 {
                let base = blockStart + index * 4
                words[index] =
                    UInt32(padded[base]) << 24 | UInt32(padded[base + 1]) << 16 | UInt32(padded[base + 2]) << 8
                    | UInt32(padded[base + 3])
            }
            for index in 16..<80 {
                words[index] = (words[index - 3] ^ words[index - 8] ^ words[index - 14] ^ words[index - 16]).rotated(1)
            }
            var (a, b, c, d, e) = state
            for index in 0..<80 {
                let (f, k): (UInt32, UInt32)
                switch index {
                case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                }
                let next = a.rotated(5) &+ f &+ e &+ k &+ words[index]
                (e, d, c, b, a) = (d, c, b.rotated(30), a, next)
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(digestLength)
        for word in [state.0, state.1, state.2, state.3, state.4] {
            digest += [
                UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8),
                UInt8(truncatingIfNeeded: word),
            ]
        }
        return digest
    }
}

/// The Merkle-Damgård padding SHA-1 and MD5 share: a 1 bit, zeros, and the message's length in bits as 8 bytes, so
/// the whole is a multiple of 64 bytes. They differ only in the length's byte order.
enum MessagePadding {
    static func padded(_ message: [UInt8], lengthBigEndian: Bool) -> [UInt8] {
        var padded = message
        padded.append(0x80)
        while padded.count % 64 != 56 { padded.append(0) }
        let bits = UInt64(message.count) &* 8
        for index in 0..<8 {
            let shift = lengthBigEndian ? UInt64(56 - 8 * index) : UInt64(8 * index)
            padded.append(UInt8(truncatingIfNeeded: bits >> shift))
        }
        return padded
    }
}

extension UInt32 {
    /// Rotated left by `count` bits.
    @inline(__always)
    func rotated(_ count: UInt32) -> UInt32 {
        (self << count) | (self >> (32 - count))
    }
}
