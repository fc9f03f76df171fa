import Testing

@testable import HuddleCrypto

/// The digests STUN and TURN need (SHA-1, MD5, HMAC-SHA1), against their RFCs' published answers, and at the
/// padding boundaries where a hand-written hash goes wrong.
@Suite("STUN digests")
struct STUNDigestTests {
    @Test("SHA-1: FIPS 180 examples and the million a's")
    func sha1() {
        #expect(hexString(SHA1.hash([UInt8]())) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hexString(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            hexString(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(
            hexString(SHA1.hash([UInt8](repeating: 0x61, count: 1_000_000)))
                == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test("SHA-1 and MD5 at every length around a block boundary, where padding goes wrong")
    func paddingBoundaries() {
        // Python's hashlib.sha1(bytes(range(n))) and hashlib.md5(bytes(range(n))).
        let expected: [(Int, String, String)] = [
            (55, "8ae2d46729cfe68ff927af5eec9c7d1b66d65ac2", "6912ee65fff2d9f9ce2508cddf8bcda0"),
            (56, "636e2ec698dac903498e648bd2f3af641d3c88cb", "51fdd1acda72405dfdfa03fcb85896d7"),
            (63, "6d942da0c4392b123528f2905c713a3ce28364bd", "48a6295221902e8e0938f773a7185e72"),
            (64, "c6138d514ffa2135bfce0ed0b8fac65669917ec7", "b2d3f56bc197fd985d5965079b5e7148"),
            (65, "69bd728ad6e13cd76ff19751fde427b00e395746", "8bd7053801c768420faf816fadba971c"),
            (119, "41c89d06001bab4ab78736b44efe7ce18ce6ae08", "1c772251899a7ff007400b888d6b2042"),
            (120, "d3dbd653bd8597b7475321b60a36891278e6a04a", "b7ba1efc6022e9ed272f00b8831e26e6"),
            (128, "e6434bc401f98603d7eda504790c98c67385d535", "37eff01866ba3f538421b30b7cbefcac"),
        ]
        for (length, sha1, md5) in expected {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
            #expect(hexString(SHA1.hash(message)) == sha1, "SHA-1 of \(length) bytes")
            #expect(hexString(MD5.hash(message)) == md5, "MD5 of \(length) bytes")
        }
    }

    @Test("MD5: the RFC 1321 test suite")
    func md5() {
        let suite: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            (
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f"
            ),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a"
            ),
        ]
        for (message, digest) in suite {
            #expect(hexString(MD5.hash(Array(message.utf8))) == digest, "MD5(\"\(message)\")")
        }
    }

    @Test("HMAC-SHA1: the RFC 2202 test cases, a long key among them")
    func hmacSHA1() {
        let cases: [([UInt8], [UInt8], String)] = [
            ([UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8), "b617318655057264e28bc0b6fb378c8ef146be00"),
            (
                Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
            ),
            (
                [UInt8](repeating: 0xAA, count: 20), [UInt8](repeating: 0xDD, count: 50),
                "125d7342b9ac11cd91a39af48aa17b4f63f175d3"
            ),
            (
                [UInt8](repeating: 0xAA, count: 80),
                Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "aa4ae5e15272d00e95705637ce8a3b55ed402112"
            ),
        ]
        for (key, message, tag) in cases {
            #expect(hexString(HMACSHA1.authenticationCode(for: message, key: key)) == tag)
            #expect(HMACSHA1.isValidAuthenticationCode(hex(tag), for: message, key: key))
        }
        var wrong = hex(cases[0].2)
        wrong[19] ^= 1
        #expect(!HMACSHA1.isValidAuthenticationCode(wrong, for: cases[0].1, key: cases[0].0))
        #expect(!HMACSHA1.isValidAuthenticationCode(wrong.dropLast(), for: cases[0].1, key: cases[0].0))
    }
}
