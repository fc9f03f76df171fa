import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

/// The routing rules of ``MessageRouter``, without a node: which subscription gets a message, what waits for a
/// subscription, and what is dropped and reported at the unclaimed buffer's limit.
@Suite("Message router")
struct MessageRouterTests {
    static let ada = Participant(id: "ada", name: "ada", staticKeyBytes: [UInt8](repeating: 1, count: 32))
    static let bob = Participant(id: "bob", name: "bob", staticKeyBytes: [UInt8](repeating: 2, count: 32))

    /// A session this node starts, for `activityIdentifier` with `activity` (an encoded activity) so far.
    static func context(activityIdentifier: String = "test", activity: [UInt8] = []) -> SessionContext {
        var random = SystemRandomGenerator()
        let record = MemberRecord(
            identity: Identity(using: &random).publicIdentity, name: "me", addresses: [], epoch: 0)
        let session = SessionID(bytes: random.bytes(count: SessionID.length))!
        let membership = SessionMembership(
            starting: session, local: record, sessionSecret: SecureBytes(count: 32, using: &random))
        return SessionContext(
            id: session, activityIdentifier: activityIdentifier, local: Participant(record),
            plan: .start(membership), activity: activity)
    }

    static func message(
        _ typeName: String, _ byte: UInt8, from source: Participant = ada, reliable: Bool = true
    )
        -> ReceivedMessage
    {
        ReceivedMessage(
            envelope: MessageEnvelope(kind: .codable, typeName: typeName, payload: [byte]), source: source,
            reliable: reliable)
    }

    static func subscription(
        _ typeName: String, of context: SessionContext, reliable: Bool = true
    )
        -> MessageRouter.Subscription
    {
        MessageRouter.Subscription(
            context: context, reliable: reliable, kind: .codable, typeName: typeName,
            queue: BoundedAsyncQueue(capacity: 16))
    }

    static func payloads(_ messages: [ReceivedMessage]) -> [UInt8] { messages.map { $0.envelope.payload[0] } }

    @Test("A message goes to every matching subscription of the current session, in order, and nowhere else")
    func matchingSubscriptionsOnly() {
        let current = Self.context()
        let other = Self.context()
        var router = MessageRouter(unclaimedLimit: 4)
        let (first, _) = router.add(Self.subscription("Stroke", of: current), current: current)
        let (second, _) = router.add(Self.subscription("Stroke", of: current), current: current)
        _ = router.add(Self.subscription("Stroke", of: current, reliable: false), current: current)
        _ = router.add(Self.subscription("Stroke", of: other), current: current)
        var batch = MessageRouter.Batch()
        for byte in [1, 2, 3] as [UInt8] {
            #expect(router.place(Self.message("Stroke", byte), in: current, into: &batch))
        }
        #expect(Set(batch.targets.map(\.id)) == [first, second])
        for target in batch.targets { #expect(Self.payloads(target.messages) == [1, 2, 3]) }
        #expect(router.unclaimed.isEmpty)
    }

    @Test("Messages nobody subscribed to wait, and the first matching subscription takes them in order")
    func heldUntilSubscribed() {
        let current = Self.context()
        var router = MessageRouter(unclaimedLimit: 8)
        var batch = MessageRouter.Batch()
        for (type, byte) in [("Stroke", 1), ("Cursor", 2), ("Stroke", 3)] as [(String, UInt8)] {
            #expect(router.place(Self.message(type, byte), in: current, into: &batch))
        }
        #expect(batch.isEmpty)
        #expect(router.unclaimed.count == 3)
        // A subscription of a session not begun yet takes nothing that belongs to the current one.
        let later = Self.context()
        #expect(router.add(Self.subscription("Stroke", of: later), current: current).backlog.isEmpty)
        let (_, backlog) = router.add(Self.subscription("Stroke", of: current), current: current)
        #expect(Self.payloads(backlog) == [1, 3])
        #expect(Self.payloads(Array(router.unclaimed)) == [2])
    }

    @Test(
        "At the limit the router asks to wait; once the grace is spent it drops and reports; a subscription resets it")
    func limitThenDropsThenReset() {
        let current = Self.context()
        var router = MessageRouter(unclaimedLimit: 2)
        var batch = MessageRouter.Batch()
        #expect(router.place(Self.message("A", 1), in: current, into: &batch))
        #expect(router.place(Self.message("A", 2), in: current, into: &batch))
        // Full and the grace not spent: nothing is done, the caller waits.
        #expect(!router.place(Self.message("A", 3), in: current, into: &batch))
        #expect(router.unclaimed.count == 2)
        #expect(router.takeDrops().isEmpty)
        router.graceSpent = true
        #expect(router.place(Self.message("A", 3), in: current, into: &batch))
        #expect(router.place(Self.message("A", 4), in: current, into: &batch))
        #expect(router.place(Self.message("A", 5, from: Self.bob), in: current, into: &batch))
        let drops = router.takeDrops()
        #expect(drops.map(\.count) == [2, 1])
        #expect(drops.map(\.participant) == [Self.ada, Self.bob])
        #expect(drops.allSatisfy { $0.reason == .noSubscriber && $0.typeName == "A" })
        #expect(router.droppedCount == 3)
        #expect(router.takeDrops().isEmpty)
        // A subscription (of another type) frees nothing, but gives the next full buffer a grace period again.
        _ = router.add(Self.subscription("B", of: current), current: current)
        #expect(!router.graceSpent)
        #expect(!router.place(Self.message("A", 6), in: current, into: &batch))
    }

    @Test("Undecodable messages and type mismatches are reported with their kind")
    func otherDrops() {
        var router = MessageRouter(unclaimedLimit: 2)
        router.noteUndecodable(from: Self.ada, reliable: false)
        router.noteTypeMismatch(Self.message("Stroke", 1))
        router.noteTypeMismatch(Self.message("Stroke", 2))
        let drops = router.takeDrops()
        #expect(drops.map(\.reason) == [.undecodable, .typeMismatch])
        #expect(drops.map(\.count) == [1, 2])
        #expect(drops[0].typeName == nil && !drops[0].reliable)
    }

    @Test("Ending a session removes its subscriptions and held messages, not those of a session not begun yet")
    func endingASession() {
        let current = Self.context()
        let next = Self.context()
        var router = MessageRouter(unclaimedLimit: 4)
        _ = router.add(Self.subscription("A", of: current), current: current)
        let (waiting, _) = router.add(Self.subscription("A", of: next), current: current)
        var batch = MessageRouter.Batch()
        #expect(router.place(Self.message("B", 1), in: current, into: &batch))
        let ended = router.removeAll(of: current)
        #expect(ended.count == 1 && ended[0].context === current)
        #expect(Array(router.subscriptions.keys) == [waiting])
        #expect(router.unclaimed.isEmpty)
        #expect(router.removeAll().count == 1)
        #expect(router.subscriptions.isEmpty)
    }
}
