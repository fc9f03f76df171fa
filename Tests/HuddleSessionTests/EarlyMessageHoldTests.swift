import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import HuddleWire
import Testing

/// Messages from an authenticated peer that is not a member yet are held, not acknowledged and dropped (issue 11):
/// bounded by ``ProtocolLimits/maxEarlyMessagesPerPeer`` and ``ProtocolLimits/maxEarlyMessageBytesPerPeer``.
@Suite("Held messages of peers that are not members yet")
struct EarlyMessageHoldTests {
    /// Endpoint `a` (a session's only member) connected to `b`, which `a`'s roster does not name.
    static func setUp() throws -> (core: SessionCore, a: Endpoint, id: ConnectionID, b: X25519PublicKey) {
        let pair = try EndpointPair.connected()
        var a = pair.a
        let b = pair.b
        _ = EndpointPair.events(&a)
        var random = ChaChaRandomGenerator(seed: 1)
        let identity = Identity(using: &random)
        let local = MemberRecord(
            identity: identity.publicIdentity, name: "a", addresses: [EndpointPair.address(1)], epoch: 0)
        let membership = SessionMembership(
            starting: SessionID(bytes: [UInt8](repeating: 7, count: SessionID.length))!, local: local,
            sessionSecret: EndpointPair.secret(9))
        var core = SessionCore(membership: membership)
        let id = try #require(a.connectionID(for: b.staticKey))
        core.handle(.connected(id, peer: b.staticKey), endpoint: &a, now: .zero)
        return (core, a, id, b.staticKey)
    }

    @Test("At the limit one more is held too (it was acknowledged) and closes the connection; twice it, dropped")
    func atTheLimit() throws {
        var (core, a, id, _) = try Self.setUp()
        let limit = ProtocolLimits.maxEarlyMessagesPerPeer
        for index in 0..<limit {
            core.handle(.message(id, channel: ChannelID(16), bytes: [UInt8(index & 0xFF)]), endpoint: &a, now: .zero)
        }
        #expect(core.earlyMessagesHeld == limit)
        #expect(core.nonMemberMessagesDropped == 0)
        #expect(a.connection(id)?.isOpen == true)
        #expect(core.pollEvent() == nil, "nothing reaches the application from a non-member")
        core.handle(.message(id, channel: ChannelID(16), bytes: [0]), endpoint: &a, now: .zero)
        #expect(core.earlyMessagesHeld == limit + 1, "its transport acknowledged it: dropping it would lose it")
        #expect(core.nonMemberMessagesDropped == 0)
        #expect(a.connection(id)?.isOpen == false, "the peer's connection is closed, so it reports the rest")
        // A peer that keeps coming back and sending (held messages survive reconnections) meets the hard ceiling at
        // twice the bound: held up to it, dropped and counted beyond.
        for index in (limit + 1)..<(2 * limit) {
            core.handle(.message(id, channel: ChannelID(16), bytes: [UInt8(index & 0xFF)]), endpoint: &a, now: .zero)
        }
        #expect(core.earlyMessagesHeld == 2 * limit)
        #expect(core.nonMemberMessagesDropped == 0)
        core.handle(.message(id, channel: ChannelID(16), bytes: [0]), endpoint: &a, now: .zero)
        #expect(core.earlyMessagesHeld == 2 * limit)
        #expect(core.nonMemberMessagesDropped == 1)
    }

    @Test("The byte bound applies too: 1 MiB in all")
    func byteLimit() throws {
        var (core, a, id, _) = try Self.setUp()
        let chunk = [UInt8](repeating: 1, count: 256 * 1024)
        for _ in 0..<(ProtocolLimits.maxEarlyMessageBytesPerPeer / chunk.count) {
            core.handle(.message(id, channel: ChannelID(16), bytes: chunk), endpoint: &a, now: .zero)
        }
        #expect(core.earlyMessagesHeld == 4)
        #expect(a.connection(id)?.isOpen == true)
        core.handle(.message(id, channel: ChannelID(16), bytes: [1]), endpoint: &a, now: .zero)
        #expect(core.earlyMessagesHeld == 5)
        #expect(a.connection(id)?.isOpen == false)
    }
}
