import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Builds a simulated mesh of endpoints that all know each other: identities, shared session secrets and link
/// addresses derived from one seed.
public enum TestMesh {
    /// The prologue every simulated endpoint uses.
    public static let prologue = Array("huddle/1 simulated session".utf8)

    /// `count` endpoints (identities and RNG seeded from `seed`), each with every other as an authorised peer.
    /// Endpoint `i` uses `overrides[i]` when given (it wins over ``SimulationSettings``), else `configuration`.
    public static func endpoints(
        count: Int, seed: UInt64, configuration: ConnectionConfiguration = ConnectionConfiguration(),
        overrides: [Int: ConnectionConfiguration] = [:]
    ) throws -> [Endpoint] {
        var random = ChaChaRandomGenerator(seed: seed ^ 0x5EED_0F_3E54)
        let identities = (0..<count).map { _ in Identity(using: &random) }
        let presharedKey = SecureBytes(count: 32, using: &random)
        let macSecret = SecureBytes(count: 32, using: &random)
        return try identities.enumerated().map { index, identity in
            var endpointConfiguration = EndpointConfiguration(
                identity: identity, prologue: prologue,
                wallClockAtOrigin: TAI64N(seconds: 1_700_000_000 + UInt64(index), nanoseconds: 0))
            endpointConfiguration.connection = overrides[index] ?? SimulationSettings.applied(to: configuration)
            var endpoint = Endpoint(
                configuration: endpointConfiguration,
                generator: ChaChaRandomGenerator(seed: seed &* 31 &+ UInt64(index)))
            for (other, peer) in identities.enumerated() where other != index {
                try endpoint.addPeer(
                    PeerCredentials(
                        staticKey: peer.agreementKey.publicKey, presharedKey: presharedKey, macSecret: macSecret))
            }
            return endpoint
        }
    }
}
