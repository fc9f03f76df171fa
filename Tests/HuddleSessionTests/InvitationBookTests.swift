import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import Testing

@testable import HuddleSession

/// ``InvitationBook``, the invitation register of ``SessionMembership``, on its own: its bounds at their limits.
@Suite("Invitation book")
struct InvitationBookTests {
    /// A grant whose secret is derived from `label`, expiring at `expiresAt`.
    static func grant(_ label: UInt64, expiresAt: UInt64 = .max) throws -> InvitationGrant {
        try InvitationGrant(secret: EndpointPair.secret(label), expiresAt: expiresAt)
    }

    /// A member key derived from `seed`.
    static func member(_ seed: UInt64) -> X25519PublicKey {
        var random = ChaChaRandomGenerator(seed: seed)
        return Identity(using: &random).agreementKey.publicKey
    }

    @Test("A member's invitation beyond its bound closes that member's oldest, and nobody else's")
    func perMemberBound() throws {
        var book = InvitationBook()
        let (ana, ben) = (Self.member(1), Self.member(2))
        let bens = try Self.grant(1000)
        let closed1 = book.open(bens, owner: ben)
        #expect(closed1.isEmpty)
        var anas: [InvitationGrant] = []
        for label in 0..<UInt64(ProtocolLimits.maxOpenInvitationsPerMember) {
            let grant = try Self.grant(label)
            anas.append(grant)
            let closed2 = book.open(grant, owner: ana)
            #expect(closed2.isEmpty)
        }
        #expect(book.count == ProtocolLimits.maxOpenInvitationsPerMember + 1)
        let one = try Self.grant(500)
        #expect(book.open(one, owner: ana) == [anas[0].id])
        #expect(!book.contains(anas[0].id) && book.contains(one.id) && book.contains(bens.id))
        #expect(book.evicted == 1)
        #expect(book.count == ProtocolLimits.maxOpenInvitationsPerMember + 1)
    }

    @Test("With every admission but the session's taken, the owner holding the most gives up its oldest")
    func totalBound() throws {
        var book = InvitationBook()
        // Invitations from WELCOMEs (owner unknown) fill the book: they are one owner, the greediest.
        var unknown: [InvitationGrant] = []
        for label in 0..<UInt64(ProtocolLimits.maxAdmissions - 1 - 3) {
            let grant = try Self.grant(label)
            unknown.append(grant)
            let closed3 = book.open(grant, owner: nil)
            #expect(closed3.isEmpty)
        }
        for (index, owner) in [Self.member(1), Self.member(2), Self.member(3)].enumerated() {
            let closed4 = book.open(try Self.grant(UInt64(900 + index)), owner: owner)
            #expect(closed4.isEmpty)
        }
        #expect(book.count == ProtocolLimits.maxAdmissions - 1)
        let next = try Self.grant(999)
        #expect(book.open(next, owner: Self.member(4)) == [unknown[0].id])
        #expect(book.count == ProtocolLimits.maxAdmissions - 1)
        #expect(book.owner(of: next.id) == Self.member(4))
    }

    @Test("Opening an open grant changes nothing; closing twice reports the second as not open")
    func idempotent() throws {
        var book = InvitationBook()
        let grant = try Self.grant(7)
        let closed5 = book.open(grant, owner: Self.member(1))
        #expect(closed5.isEmpty)
        let closed6 = book.open(grant, owner: Self.member(2))
        #expect(closed6.isEmpty)
        #expect(book.owner(of: grant.id) == Self.member(1))
        let first = book.close(grant.id)
        let second = book.close(grant.id)
        #expect(first && !second)
        #expect(book.count == 0 && book.evicted == 0)
    }

    @Test("Expiry: the earliest of the open grants, and exactly those expired at a time")
    func expiry() throws {
        var book = InvitationBook()
        #expect(book.earliestExpiry == nil)
        let early = try Self.grant(1, expiresAt: 100)
        let late = try Self.grant(2, expiresAt: 200)
        _ = book.open(late, owner: nil)
        _ = book.open(early, owner: nil)
        #expect(book.earliestExpiry == 100)
        #expect(book.expired(at: 99).isEmpty)
        #expect(book.expired(at: 100) == [early.id])
        #expect(Set(book.expired(at: 200)) == [early.id, late.id])
        book.close(early.id)
        #expect(book.earliestExpiry == 200)
    }
}
