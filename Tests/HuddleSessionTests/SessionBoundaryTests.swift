import HuddleCrypto
import HuddleProtocol
import Testing

@testable import HuddleSession

/// ``SessionBoundary``'s departures on their own: the bound at its limit and what the admission epoch changes.
@Suite("Session boundary departures")
struct SessionBoundaryTests {
    static func signingKey(_ index: Int) throws -> Ed25519PublicKey {
        var random = ChaChaRandomGenerator(seed: UInt64(index) + 1)
        return Ed25519PrivateKey(using: &random).publicKey
    }

    @Test("At most maxDepartures departures are remembered; the oldest is forgotten first")
    func departuresAtTheLimit() throws {
        var boundary = SessionBoundary()
        let keys = try (0...ProtocolLimits.maxDepartures).map(Self.signingKey)
        for key in keys.dropLast() { boundary.rememberDeparture(of: key) }
        #expect(boundary.departures.count == ProtocolLimits.maxDepartures)
        #expect(boundary.departedUnderCurrentAdmission(keys[0]))
        boundary.rememberDeparture(of: keys.last!)
        #expect(boundary.departures.count == ProtocolLimits.maxDepartures)
        #expect(!boundary.departedUnderCurrentAdmission(keys[0]))
        #expect(boundary.departedUnderCurrentAdmission(keys[1]))
        #expect(boundary.departedUnderCurrentAdmission(keys.last!))
    }

    @Test("A departure counts under the key it left under only; one let in again is forgotten")
    func departureFollowsTheAdmission() throws {
        var boundary = SessionBoundary()
        let (ann, bob) = (try Self.signingKey(1), try Self.signingKey(2))
        boundary.rememberDeparture(of: ann)
        boundary.rememberDeparture(of: bob)
        boundary.forgetDeparture(of: bob)
        #expect(boundary.departedUnderCurrentAdmission(ann))
        #expect(!boundary.departedUnderCurrentAdmission(bob))
        let adopted = boundary.adopt(
            AdmissionKey(epoch: 1, author: bob, secret: SecureBytes(Array(repeating: 7, count: 32))))
        #expect(adopted)
        #expect(!boundary.departedUnderCurrentAdmission(ann))
    }
}
