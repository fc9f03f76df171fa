import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import Testing

@testable import HuddleSession

/// ``JoinProcedure``, the join of ``SessionMembership`` from both sides, on its own: whom a joiner asks, and when it
/// gives up.
@Suite("Join procedure")
struct JoinProcedureTests {
    /// A member key derived from `seed`.
    static func member(_ seed: UInt64) -> X25519PublicKey {
        var random = ChaChaRandomGenerator(seed: seed)
        return Identity(using: &random).agreementKey.publicKey
    }

    /// A joiner whose ticket names `hints`, in that order, member `i` at address `i + 1`.
    static func joiner(_ hints: [X25519PublicKey]) throws -> JoinProcedure {
        var join = JoinProcedure(invitation: try SessionKeys.admissionID(invitationSecret: EndpointPair.secret(5)))
        for (index, key) in hints.enumerated() {
            let added = join.addHint(key, addresses: [EndpointPair.address(UInt8(index + 1))])
            #expect(added)
        }
        return join
    }

    @Test("A member the ticket names twice is one hint, dialled again at the first naming's addresses")
    func duplicateHints() throws {
        let ana = Self.member(1)
        var join = try Self.joiner([ana])
        let again = join.addHint(ana, addresses: [EndpointPair.address(9)])
        #expect(!again)
        #expect(join.hints == [ana])
        _ = join.ask(ana)
        let step = join.connectionClosed(ana, connected: [])
        #expect(step == .redial(ana, addresses: [EndpointPair.address(1)]))
    }

    @Test("A retry cycles through the connected hints in ticket order, starting after the sponsor")
    func retryCycles() throws {
        let (ana, ben, cy, dee) = (Self.member(1), Self.member(2), Self.member(3), Self.member(4))
        var join = try Self.joiner([ana, ben, cy, dee])
        let connected: Set = [ana, cy, dee]
        var asked: [X25519PublicKey] = []
        for _ in 0..<4 {
            guard let next = join.nextToAsk(connected: connected) else { break }
            asked.append(next)
            _ = join.ask(next)
        }
        #expect(asked == [ana, cy, dee, ana])
        // A sponsor that is not connected: start again from the first connected hint.
        _ = join.ask(ben)
        #expect(join.nextToAsk(connected: connected) == ana)
        // The sponsor alone: ask it again. Nobody connected: nobody to ask.
        _ = join.ask(cy)
        #expect(join.nextToAsk(connected: [cy]) == cy)
        #expect(join.nextToAsk(connected: []) == nil)
        #expect([ana, ben, cy, dee].allSatisfy { join.wasAsked($0) })
    }

    @Test("The sponsor's connection closing: ask a connected hint, else dial it again up to the limit, then give up")
    func sponsorLost() throws {
        let (ana, ben) = (Self.member(1), Self.member(2))
        var join = try Self.joiner([ana, ben])
        _ = join.ask(ana)
        // Another hint's connection closing is not the sponsor's.
        let other = join.connectionClosed(ben, connected: [ana])
        #expect(other == nil && join.sponsor == ana)
        let toBen = join.connectionClosed(ana, connected: [ben])
        #expect(toBen == .ask(ben) && join.sponsor == nil)
        for attempt in 1...ProtocolLimits.maxJoinRedialsPerMember {
            _ = join.ask(ben)
            let step = join.connectionClosed(ben, connected: [])
            #expect(step == .redial(ben, addresses: [EndpointPair.address(2)]), "attempt \(attempt)")
        }
        _ = join.ask(ben)
        let last = join.connectionClosed(ben, connected: [])
        #expect(last == .fail)
        #expect(join.redials[ben] == ProtocolLimits.maxJoinRedialsPerMember && join.redials[ana] == nil)
    }

    @Test("Hints that cannot be reached are dropped; the join fails only with no hint and no sponsor left")
    func hintsFail() throws {
        let (ana, ben, cy) = (Self.member(1), Self.member(2), Self.member(3))
        var join = try Self.joiner([ana, ben, cy])
        let stranger = join.hintFailed(Self.member(9))
        let first = join.hintFailed(ana)
        #expect(!stranger && !first && join.hints == [ben, cy])
        _ = join.ask(ben)
        // The sponsor is connected: a failed attempt to reach the last other hint leaves it to answer.
        let withSponsor = join.hintFailed(cy)
        #expect(!withSponsor)
        _ = join.connectionClosed(ben, connected: [])
        let last = join.hintFailed(ben)
        let again = join.hintFailed(ben)
        #expect(last && !again)
    }

    @Test("A hint of another protocol revision is one failed hint: the join goes on, and fails naming it at the end")
    func hintOfAnotherRevision() throws {
        let (ana, ben) = (Self.member(1), Self.member(2))
        var join = try Self.joiner([ana, ben])
        let refusal = (ours: Array("huddle/1".utf8), theirs: Array("huddle/2".utf8))
        let first = join.hintFailed(ana, refusal: refusal)
        #expect(!first && join.hints == [ben], "ben may still let this node in")
        // ben cannot be reached either: the join fails, and the refusal is what it reports.
        let last = join.hintFailed(ben)
        #expect(last)
        #expect(join.refusal?.ours == refusal.ours && join.refusal?.theirs == refusal.theirs)
        // Without any refusal the join fails for want of an answer.
        var plain = try Self.joiner([ana])
        let alone = plain.hintFailed(ana)
        #expect(alone && plain.refusal == nil)
    }

    @Test("A connection carries a request when it is the first hint to answer or the sponsor again, no other")
    func asksOnConnection() throws {
        let (ana, ben) = (Self.member(1), Self.member(2))
        var join = try Self.joiner([ana, ben])
        #expect(join.asksOnConnection(to: ana) && join.asksOnConnection(to: ben))
        #expect(!join.asksOnConnection(to: Self.member(9)))
        _ = join.ask(ana)
        #expect(join.asksOnConnection(to: ana) && !join.asksOnConnection(to: ben))
        // After the WELCOME nobody is asked, but a late WELCOME from a member asked is still recognised.
        join.finish()
        #expect(!join.asksOnConnection(to: ana) && join.sponsor == nil && join.hints.isEmpty)
        #expect(join.wasAsked(ana) && !join.wasAsked(ben))
        #expect(join.nextToAsk(connected: [ana, ben]) == nil)
    }

    @Test("Without an invitation (the member that started the session) nobody is asked")
    func noInvitation() {
        var join = JoinProcedure()
        let ana = Self.member(1)
        let invitation = join.ask(ana)
        #expect(invitation == nil && join.sponsor == nil && !join.wasAsked(ana))
    }

    @Test("A sponsor remembers a joiner it welcomed until the joiner's connection is renewed")
    func welcomed() {
        var join = JoinProcedure()
        let ana = Self.member(1)
        #expect(!join.hasWelcomed(ana))
        join.welcome(ana)
        join.welcome(ana)
        #expect(join.hasWelcomed(ana))
        join.connectionOpened(ana)
        #expect(!join.hasWelcomed(ana))
    }
}
