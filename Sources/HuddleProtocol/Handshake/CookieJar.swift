import HuddleCrypto

/// The responder's cookie secret and cookie maker (WireGuard's cookie mechanism, TEST-MATRIX H12, H13, D2, D3).
///
/// Under load a responder answers a handshake initiation that lacks a valid `mac2` with a 64-byte cookie reply
/// instead of doing Diffie-Hellman work. The cookie is a MAC of the initiator's source address under a secret that
/// changes every ``secretLifetime``, so it proves the initiator can receive at that address, costs the responder no
/// state per initiator, and is useless from any other address.
public struct CookieJar: Sendable {
    /// How long one cookie secret is used before a fresh one replaces it (WireGuard: 2 minutes).
    public static let secretLifetime: Duration = .seconds(120)

    private var secret: SecureBytes?
    private var secretCreated = Instant.zero

    /// A jar with no secret yet; the first ``cookie(forAddress:now:using:)`` draws one.
    public init() {}

    /// The current cookie for a source address (its canonical bytes), rotating the secret when it is too old.
    public mutating func cookie(
        forAddress address: [UInt8], now: Instant, using generator: inout some RandomBytesGenerator
    ) -> [UInt8] {
        if secret == nil || now - secretCreated >= Self.secretLifetime {
            secret = SecureBytes(count: 32, using: &generator)
            secretCreated = now
        }
        return Self.cookie(forAddress: address, secret: secret!)
    }

    /// The cookie a valid `mac2` must have been computed with, if the jar has a current secret.
    public func currentCookie(forAddress address: [UInt8], now: Instant) -> [UInt8]? {
        guard let secret, now - secretCreated < Self.secretLifetime else { return nil }
        return Self.cookie(forAddress: address, secret: secret)
    }

    private static func cookie(forAddress address: [UInt8], secret: SecureBytes) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: MacAuthenticator.macLength)
        secret.withUnsafeBytes { key in
            address.withUnsafeBytes { input in
                output.withUnsafeMutableBytes { out in
                    // 32-byte key and 16-byte output are within BLAKE2b's limits, so this cannot throw.
                    try! BLAKE2b.hash(input, key: key, into: out)
                }
            }
        }
        return output
    }
}
