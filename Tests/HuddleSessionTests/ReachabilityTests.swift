import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import Testing

@testable import HuddleSession

/// ``Reachability``, the connections of ``SessionMembership``, on its own: each transition reported once.
@Suite("Reachability")
struct ReachabilityTests {
    /// A member key derived from `seed`.
    static func member(_ seed: UInt64) -> X25519PublicKey {
        var random = ChaChaRandomGenerator(seed: seed)
        return Identity(using: &random).agreementKey.publicKey
    }

    @Test("A member that became unreachable and reconnected is reported lost once and back once")
    func unreachableThenReconnected() {
        var reachability = Reachability()
        let ana = Self.member(1)
        reachability.connect(ana, address: EndpointPair.address(1))
        let closed = reachability.disconnect(ana)
        let lost = reachability.markUnreachable(ana)
        let lostAgain = reachability.markUnreachable(ana)
        #expect(closed && lost && !lostAgain)
        #expect(reachability.isUnreachable(ana) && !reachability.isConnected(ana))
        // Connected again, it stays unreachable until the membership takes it back: the two are independent.
        reachability.connect(ana, address: EndpointPair.address(1))
        #expect(reachability.isConnected(ana) && reachability.isUnreachable(ana))
        let back = reachability.markReachable(ana)
        let backAgain = reachability.markReachable(ana)
        #expect(back && !backAgain)
        #expect(!reachability.isUnreachable(ana) && reachability.unreachable.isEmpty)
    }

    @Test("A close counts only for a connected peer: repeated or stale closes change nothing")
    func closesCountedOnce() {
        var reachability = Reachability()
        let (ana, ben) = (Self.member(1), Self.member(2))
        let stale = reachability.disconnect(ana)
        #expect(!stale)
        reachability.connect(ana, address: nil)
        reachability.connect(ana, address: nil)
        reachability.connect(ben, address: nil)
        let first = reachability.disconnect(ana)
        let second = reachability.disconnect(ana)
        #expect(first && !second)
        #expect(reachability.connected == [ben])
    }

    @Test("The observed address outlives the connection and is replaced, or cleared, by the next one")
    func observedAddresses() {
        var reachability = Reachability()
        let ana = Self.member(1)
        #expect(reachability.observedAddress(of: ana) == nil)
        reachability.connect(ana, address: EndpointPair.address(1))
        _ = reachability.disconnect(ana)
        #expect(reachability.observedAddress(of: ana) == EndpointPair.address(1))
        reachability.connect(ana, address: EndpointPair.address(2))
        #expect(reachability.observedAddress(of: ana) == EndpointPair.address(2))
        reachability.connect(ana, address: nil)
        #expect(reachability.observedAddress(of: ana) == nil)
    }
}
