import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import Testing

/// A joiner whose connection to its sponsor closes before the WELCOME dials the member again instead of failing at
/// once (found under a handshake flood: the member evicted the pending joiner, and `huddle join` failed with "the
/// member that was letting this node in disconnected" although a second handshake would have got in).
@Suite("Joining after the sponsor's connection closed")
struct JoinRedialTests {
    static func joiner() throws -> (SessionMembership, X25519PublicKey) {
        var random = ChaChaRandomGenerator(seed: 41)
        let local = MemberRecord(
            identity: Identity(using: &random).publicIdentity, name: "joiner", addresses: [EndpointPair.address(1)],
            epoch: 0)
        let member = Identity(using: &random).agreementKey.publicKey
        let membership = try SessionMembership(
            joining: SessionID(bytes: [UInt8](repeating: 3, count: SessionID.length))!, local: local,
            invitationSecret: EndpointPair.secret(5), members: [(member, [EndpointPair.address(2)])])
        return (membership, member)
    }

    static func actions(_ membership: inout SessionMembership) -> [MembershipAction] {
        var actions: [MembershipAction] = []
        while let action = membership.pollAction() { actions.append(action) }
        return actions
    }

    @Test("The member is dialled again up to the limit; after that the join fails with the reason")
    func redialsThenFails() throws {
        var (membership, member) = try Self.joiner()
        _ = Self.actions(&membership)
        for attempt in 1...(ProtocolLimits.maxJoinRedialsPerMember + 1) {
            membership.peerConnected(member, address: EndpointPair.address(2))
            let asked = Self.actions(&membership)
            #expect(asked.contains { if case .send(_, let to) = $0 { to == member } else { false } }, "join request")
            membership.peerDisconnected(member)
            let after = Self.actions(&membership)
            let redialled = after.contains {
                if case .dial(let key, let addresses) = $0 {
                    key == member && addresses == [EndpointPair.address(2)]
                } else {
                    false
                }
            }
            let failed = after.contains { if case .joinFailed = $0 { true } else { false } }
            if attempt <= ProtocolLimits.maxJoinRedialsPerMember {
                #expect(redialled && !failed, "attempt \(attempt): \(after)")
            } else {
                #expect(!redialled && failed, "attempt \(attempt): \(after)")
            }
        }
    }
}
