import HuddleCrypto
import HuddleProtocol
import HuddleWire
import Testing

@Suite("Handshake timestamps, mac1/mac2 and cookies")
struct HandshakeAuthenticationTests {
    @Test("TAI64N encodes big-endian seconds + 2^62 then nanoseconds, and orders by time")
    func tai64n() throws {
        let stamp = TAI64N(seconds: 1_700_000_000, nanoseconds: 123_456_789)
        let bytes = stamp.bytes
        #expect(bytes == [0x40, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00, 0x07, 0x5b, 0xcd, 0x15])
        #expect(TAI64N(bytes: bytes) == stamp)
        #expect(TAI64N(bytes: bytes.dropLast()) == nil)
        #expect(TAI64N(bytes: [0x40, 0, 0, 0, 0, 0, 0, 0, 0x3b, 0x9a, 0xca, 0x00]) == nil, "nanoseconds >= 10^9")
        #expect(TAI64N(seconds: 1, nanoseconds: 0) > TAI64N(seconds: 0, nanoseconds: 999_999_999))
        #expect(TAI64N(seconds: 5, nanoseconds: 1_500_000_000) == TAI64N(seconds: 6, nanoseconds: 500_000_000))
    }

    @Test("The timestamp clock follows monotonic time from one wall reading and never repeats (N17)")
    func timestampClock() {
        var clock = TimestampClock(wallClockAtOrigin: TAI64N(seconds: 1000, nanoseconds: 999_999_000))
        let first = clock.timestamp(now: .zero + .microseconds(2))
        #expect(first == TAI64N(seconds: 1001, nanoseconds: 1000))
        // The same instant again, or an earlier one, still yields a strictly later timestamp.
        let second = clock.timestamp(now: .zero + .microseconds(2))
        let third = clock.timestamp(now: .zero)
        #expect(second > first && third > second)
        let later = clock.timestamp(now: .zero + .seconds(3600))
        #expect(later.seconds == 4600)
    }

    func authenticators() throws -> (MacAuthenticator, MacAuthenticator, X25519PublicKey) {
        var random = ChaChaRandomGenerator(seed: 21)
        let responder = X25519PrivateKey(using: &random)
        let secret = SecureBytes(count: 32, using: &random)
        let member = try MacAuthenticator(macSecret: secret, receiverStatic: responder.publicKey)
        let stranger = try MacAuthenticator(
            macSecret: SecureBytes(count: 32, using: &random), receiverStatic: responder.publicKey)
        return (member, stranger, responder.publicKey)
    }

    @Test("mac1 from a member verifies; from a stranger or after any change it does not (H4)")
    func mac1() throws {
        let (member, stranger, _) = try authenticators()
        var message = [UInt8](repeating: 0x11, count: HandshakeInitiation.encodedLength)
        try member.stamp(
            &message, mac1Offset: HandshakeInitiation.mac1Offset, mac2Offset: HandshakeInitiation.mac2Offset,
            cookie: nil)
        #expect(member.hasValidMac1(message, mac1Offset: HandshakeInitiation.mac1Offset))
        #expect(!stranger.hasValidMac1(message, mac1Offset: HandshakeInitiation.mac1Offset))
        #expect(message[HandshakeInitiation.mac2Offset...].allSatisfy { $0 == 0 }, "no cookie: mac2 is zero")
        for index in [0, 8, 100, HandshakeInitiation.mac1Offset - 1, HandshakeInitiation.mac1Offset] {
            var tampered = message
            tampered[index] ^= 1
            #expect(!member.hasValidMac1(tampered, mac1Offset: HandshakeInitiation.mac1Offset), "byte \(index)")
        }
        #expect(!member.hasValidMac1(Array(message.prefix(100)), mac1Offset: HandshakeInitiation.mac1Offset))
    }

    @Test("A cookie for address A gives a valid mac2 from A only, and rotates after 120 s (H12, H13)")
    func cookies() throws {
        let (member, _, _) = try authenticators()
        var jar = CookieJar()
        var random = ChaChaRandomGenerator(seed: 22)
        let addressA: [UInt8] = [127, 0, 0, 1, 0x1f, 0x90]
        let addressB: [UInt8] = [127, 0, 0, 2, 0x1f, 0x90]
        let cookieA = jar.cookie(forAddress: addressA, now: .zero, using: &random)
        #expect(jar.cookie(forAddress: addressA, now: .zero + .seconds(119), using: &random) == cookieA)
        #expect(jar.currentCookie(forAddress: addressB, now: .zero + .seconds(1)) != cookieA)

        var message = [UInt8](repeating: 0x22, count: HandshakeInitiation.encodedLength)
        try member.stamp(
            &message, mac1Offset: HandshakeInitiation.mac1Offset, mac2Offset: HandshakeInitiation.mac2Offset,
            cookie: cookieA)
        let expectedFromA = try #require(jar.currentCookie(forAddress: addressA, now: .zero + .seconds(1)))
        let expectedFromB = try #require(jar.currentCookie(forAddress: addressB, now: .zero + .seconds(1)))
        #expect(
            MacAuthenticator.hasValidMac2(message, mac2Offset: HandshakeInitiation.mac2Offset, cookie: expectedFromA))
        #expect(
            !MacAuthenticator.hasValidMac2(message, mac2Offset: HandshakeInitiation.mac2Offset, cookie: expectedFromB))

        #expect(jar.currentCookie(forAddress: addressA, now: .zero + .seconds(120)) == nil, "expired secret")
        let rotated = jar.cookie(forAddress: addressA, now: .zero + .seconds(120), using: &random)
        #expect(rotated != cookieA)
    }

    @Test("A cookie reply opens only for the initiation it answers; replies are smaller than initiations (D3)")
    func cookieReply() throws {
        let (member, stranger, _) = try authenticators()
        let cookie = [UInt8](repeating: 0x33, count: 16)
        let nonce = [UInt8](repeating: 0x44, count: 24)
        let mac1 = [UInt8](repeating: 0x55, count: 16)
        let sealed = try member.sealCookie(cookie, nonce: nonce, answeringMac1: mac1)
        #expect(sealed.count == 32)
        #expect(try member.openCookie(sealed, nonce: nonce, answeringMac1: mac1) == cookie)
        #expect(throws: CryptoError.authenticationFailed) {
            try member.openCookie(sealed, nonce: nonce, answeringMac1: [UInt8](repeating: 0x56, count: 16))
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try stranger.openCookie(sealed, nonce: nonce, answeringMac1: mac1)
        }
        #expect(CookieReply.encodedLength < HandshakeResponse.encodedLength)
        #expect(HandshakeResponse.encodedLength < HandshakeInitiation.encodedLength)
    }
}
