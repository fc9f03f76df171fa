import HuddleCrypto

/// The MAC key a relay client and its relay share: `K = BLAKE2b-256(key: X25519(client, relay), "huddle relay v1")`.
/// RELAY_REGISTER's MAC proves the client holds its static key; RELAY_REGISTERED's proves the answer comes from the
/// relay it registered with. Both are `BLAKE2b-128(key: K, bytes before the MAC)`.
struct RelayAuthenticator {
    /// The label mixed into the key (docs/PROTOCOL.md 10).
    static let label = Array("huddle relay v1".utf8)
    /// MAC length in bytes.
    static let macLength = 16

    private let key: SecureBytes

    /// The authenticator for the agreement between `local` and `remote` (either side computes the same).
    init(local: X25519PrivateKey, remote: X25519PublicKey) throws {
        let shared = try local.sharedSecret(with: remote)
        var hash = try BLAKE2b(outputLength: 32, key: shared)
        hash.update(Self.label)
        let derived = hash.finalize()
        key = SecureBytes(count: derived.count) { $0.copyBytes(from: derived) }
    }

    /// The MAC of `bytes`.
    func mac(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        // A 16-byte output with a 32-byte key is always within BLAKE2b's parameters.
        var hash = try! BLAKE2b(outputLength: Self.macLength, key: key)
        hash.update(bytes)
        return hash.finalize()
    }

    /// Whether `mac` is the MAC of `bytes` (compared in constant time).
    func verify(_ mac: some Sequence<UInt8>, of bytes: some Sequence<UInt8>) -> Bool {
        ConstantTime.equals(self.mac(bytes), mac)
    }
}
