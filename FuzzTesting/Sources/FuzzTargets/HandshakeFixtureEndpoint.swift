import HuddleCrypto
import HuddleProtocol

/// The endpoints of the handshake targets: one prologue and one wall clock, so the same identity and seed always
/// produce the same initiation.
enum HandshakeFixtureEndpoint {
    /// The prologue of every fixture endpoint (the protocol revision a refusal names).
    static let prologue = Array("huddle/1".utf8)

    /// An endpoint of `identity` whose generator is seeded with `seed`; it demands cookies above `threshold`
    /// initiations a second (0: from the first).
    static func make(_ identity: Identity, seed: UInt64, cookiesAbove threshold: Int = 128) -> Endpoint {
        var configuration = EndpointConfiguration(
            identity: identity, prologue: prologue,
            wallClockAtOrigin: TAI64N(seconds: 1_800_000_000, nanoseconds: 0))
        configuration.initiationsPerSecondBeforeCookies = threshold
        return Endpoint(configuration: configuration, generator: ChaChaRandomGenerator(seed: seed))
    }
}
