import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// TEST-MATRIX D1: what a stranger's initiation-shaped garbage costs before it is dropped. Every member of a session
/// shares one `macSecret`, so the endpoint keeps one `mac1` key for all of them: a garbage initiation costs one keyed
/// hash for the members plus one per open admission, however many members there are.
@Suite("mac1 keyed hashes per initiation")
struct Mac1KeyCountTests {
    /// An initiation's shape (type 1, the right length) with random contents: its `mac1` verifies under no key.
    static func garbageInitiation(_ random: inout ChaChaRandomGenerator) -> [UInt8] {
        let body = SecureBytes(count: HandshakeInitiation.encodedLength - 4, using: &random)
        return [1, 0, 0, 0] + body.copyToArray()
    }

    /// Hands `count` garbage initiations to `endpoint`; returns the keyed hashes they cost and the `mac1` drops.
    static func flood(_ endpoint: inout Endpoint, count: Int) -> (hashes: Int, dropped: Int) {
        var random = ChaChaRandomGenerator(seed: 0xD1)
        let before = endpoint.statistics
        for _ in 0..<count {
            endpoint.handle(datagram: garbageInitiation(&random), from: EndpointPair.address(66), now: .zero)
        }
        return (
            endpoint.statistics.mac1Computations - before.mac1Computations,
            endpoint.statistics.mac1Failures - before.mac1Failures
        )
    }

    @Test("200 members sharing one macSecret and 2 admissions: 3 keyed hashes per garbage initiation, not 202")
    func oneHashPerDistinctKey() throws {
        var endpoint = EndpointPair.endpoint(seed: 1)
        var random = ChaChaRandomGenerator(seed: 2)
        var members: [X25519PublicKey] = []
        for _ in 0..<200 {
            let key = Identity(using: &random).agreementKey.publicKey
            members.append(key)
            try endpoint.addPeer(
                PeerCredentials(staticKey: key, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2))
            )
        }
        for id in 0..<2 {
            try endpoint.addAdmission(
                AdmissionID(UInt64(10 + id)),
                credentials: AdmissionCredentials(
                    presharedKey: EndpointPair.secret(UInt64(20 + id)), macSecret: EndpointPair.secret(UInt64(30 + id)))
            )
        }
        var flooded = Self.flood(&endpoint, count: 100)
        #expect(flooded.dropped == 100)
        #expect(flooded.hashes == 100 * 3)

        // A peer with credentials of its own adds its key; removing it takes the key away again.
        let stranger = Identity(using: &random).agreementKey.publicKey
        try endpoint.addPeer(
            PeerCredentials(
                staticKey: stranger, presharedKey: EndpointPair.secret(3), macSecret: EndpointPair.secret(4)))
        #expect(Self.flood(&endpoint, count: 10).hashes == 10 * 4)
        endpoint.removePeer(stranger, now: .zero)
        #expect(Self.flood(&endpoint, count: 10).hashes == 10 * 3)

        // The members' key stays while one member uses it, and goes with the last.
        for key in members.dropLast() { endpoint.removePeer(key, now: .zero) }
        #expect(Self.flood(&endpoint, count: 10).hashes == 10 * 3)
        endpoint.removePeer(members.last!, now: .zero)
        flooded = Self.flood(&endpoint, count: 10)
        #expect(flooded.hashes == 10 * 2)
        #expect(flooded.dropped == 10)
    }

    @Test("A member's genuine initiation still verifies under the shared key")
    func genuineInitiationStillAccepted() throws {
        var a = EndpointPair.endpoint(seed: 3)
        var b = EndpointPair.endpoint(seed: 4)
        var random = ChaChaRandomGenerator(seed: 5)
        // b knows 50 other members with the same credentials, and a.
        for _ in 0..<50 {
            try b.addPeer(
                PeerCredentials(
                    staticKey: Identity(using: &random).agreementKey.publicKey, presharedKey: EndpointPair.secret(1),
                    macSecret: EndpointPair.secret(2)))
        }
        let shared = { (key: X25519PublicKey) in
            PeerCredentials(staticKey: key, presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2))
        }
        try b.addPeer(shared(a.staticKey))
        try a.addPeer(shared(b.staticKey))
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        _ = EndpointPair.exchange(&a, &b, now: .zero)
        #expect(b.statistics.initiationsProcessed == 1)
        #expect(b.statistics.mac1Computations == 1, "one key checked for the members, not 51")
        #expect(b.statistics.responsesSent == 1)
    }
}
