import HuddleCrypto
import HuddleProtocol
import Testing

@testable import HuddleSession

/// ``ActivityRegister``, the shared activity of ``SessionMembership``, on its own.
@Suite("Activity register")
struct ActivityRegisterTests {
    /// An author's signing key derived from `seed`.
    static func author(_ seed: UInt64) -> Ed25519PublicKey {
        var random = ChaChaRandomGenerator(seed: seed)
        return Identity(using: &random).signingKey.publicKey
    }

    /// A member's static key derived from `seed`.
    static func member(_ seed: UInt64) -> X25519PublicKey {
        var random = ChaChaRandomGenerator(seed: seed)
        return Identity(using: &random).agreementKey.publicKey
    }

    static func record(clock: UInt64, author: UInt64, _ text: String) -> ActivityRecord {
        ActivityRecord(clock: clock, author: Self.author(author), payload: Array(text.utf8))
    }

    @Test("Last writer wins by clock, then by author; an older or equal value is refused")
    func lastWriterWins() {
        var register = ActivityRegister()
        let first = register.adopt(Self.record(clock: 2, author: 1, "a"), from: nil)
        let older = register.adopt(Self.record(clock: 1, author: 2, "old"), from: nil)
        let same = register.adopt(Self.record(clock: 2, author: 1, "a"), from: nil)
        #expect(first && !older && !same)
        #expect(register.current?.payload == Array("a".utf8))
        // Same clock, two authors: every member picks the same one, whatever order they arrive in.
        let (x, y) = (Self.record(clock: 3, author: 1, "x"), Self.record(clock: 3, author: 2, "y"))
        var other = ActivityRegister()
        _ = register.adopt(x, from: nil)
        _ = register.adopt(y, from: nil)
        _ = other.adopt(y, from: nil)
        _ = other.adopt(x, from: nil)
        #expect(register.current?.payload == other.current?.payload)
        #expect(register.forwards == 0 && !register.forwardPending)
    }

    @Test(
        "A value from a member is forwarded once, the current one, never back to its source; superseded ones coalesce")
    func forwarding() {
        var register = ActivityRegister()
        let (ana, ben) = (Self.member(1), Self.member(2))
        _ = register.adopt(Self.record(clock: 1, author: 1, "one"), from: ana)
        _ = register.adopt(Self.record(clock: 2, author: 1, "two"), from: ben)
        #expect(register.forwardPending && register.coalesced == 1)
        let forward = register.takeForward(sending: true)
        #expect(forward?.record.payload == Array("two".utf8) && forward?.except == ben)
        #expect(register.forwards == 1 && !register.forwardPending)
        let again = register.takeForward(sending: true)
        #expect(again == nil)
        // A node that is no longer a member clears the pending forward without sending it.
        _ = register.adopt(Self.record(clock: 3, author: 1, "three"), from: ana)
        let notSent = register.takeForward(sending: false)
        #expect(notSent == nil && !register.forwardPending && register.forwards == 1)
    }

    @Test("Setting one's own value replaces a pending forward (its broadcast reaches everyone)")
    func ownValue() {
        var register = ActivityRegister()
        _ = register.adopt(Self.record(clock: 1, author: 1, "theirs"), from: Self.member(1))
        register.set(Self.record(clock: 2, author: 2, "mine"))
        #expect(!register.forwardPending && register.coalesced == 1)
        #expect(register.current?.payload == Array("mine".utf8))
        let forward = register.takeForward(sending: true)
        #expect(forward == nil)
    }
}
