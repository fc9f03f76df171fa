import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire
import Logging
import Testing

@testable import Huddle

/// How the session machine's events become the public API's state (``SessionContext/apply(_:directory:logger:)``),
/// without a node: what each event changes, and what it leaves the engine to do.
@Suite("Session events applied to the API's state")
struct SessionContextEventTests {
    static let channel = SessionEngine.messengerChannel
    static let logger = Logger(label: "test")

    static func member(_ name: String) -> MemberRecord {
        var random = SystemRandomGenerator()
        return MemberRecord(identity: Identity(using: &random).publicIdentity, name: name, addresses: [], epoch: 0)
    }

    static func apply(_ event: SessionEvent, to context: SessionContext) -> SessionContext.EventOutcome {
        var directory = ParticipantDirectory()
        return context.apply(event, directory: &directory, logger: logger)
    }

    @Test("Joined: the session is joined when the activity is the expected one, over when it is another")
    func joinedChecksTheActivity() throws {
        let activity = try ActivityCoding.encode(DrawTogether(canvas: "a"))
        let expected = MessageRouterTests.context(
            activityIdentifier: DrawTogether.activityIdentifier, activity: activity)
        guard case .joined = Self.apply(.joined, to: expected) else {
            Issue.record("the expected activity did not join")
            return
        }
        #expect(expected.state.value == .joined)
        let other = MessageRouterTests.context(activityIdentifier: "another.activity", activity: activity)
        guard case .over(.activityMismatch(let wanted, let found), .joinFailed, false) = Self.apply(.joined, to: other)
        else {
            Issue.record("another activity was not refused")
            return
        }
        #expect(wanted == "another.activity" && found == DrawTogether.activityIdentifier)
        #expect(other.state.value == .waiting)
    }

    @Test("Arrivals and departures change the participants and are told on the change stream, in order")
    func arrivalsAndDepartures() async {
        let context = MessageRouterTests.context()
        let changes = context.changes.stream()
        let ada = Self.member("ada")
        var directory = ParticipantDirectory()
        for event in [SessionEvent.participantJoined(ada), .participantLeft(ada, .unreachable)] {
            guard
                case .none = context.apply(
                    event, directory: &directory, logger: Self.logger)
            else {
                Issue.record("\(event) asked the engine for more")
                return
            }
            if case .participantJoined = event { #expect(context.participants.value.contains(Participant(ada))) }
        }
        #expect(context.participants.value == [context.local])
        context.invalidate(.left)
        var seen: [ParticipantChange] = []
        for await change in changes { seen.append(change) }
        #expect(seen == [.joined(Participant(ada)), .left(Participant(ada), reason: .unreachable)])
    }

    @Test("Undelivered messages are counted on the messenger's channels only (both priorities), with their receipts")
    func undeliveredCountsMessengerMessages() {
        let context = MessageRouterTests.context()
        let peer = Self.member("ada").staticKey
        let messages = [
            UndeliveredMessage(channel: Self.channel, sequence: MessageSequence(1), tag: 11),
            UndeliveredMessage(channel: ChannelID(3), sequence: MessageSequence(1), tag: 99),
            UndeliveredMessage(channel: Self.channel, sequence: MessageSequence(2), tag: 12),
            UndeliveredMessage(channel: SessionEngine.messengerBulkChannel, sequence: MessageSequence(1), tag: 13),
            UndeliveredMessage(channel: JournalMessage.bulkChannel, sequence: MessageSequence(1), tag: 98),
        ]
        guard
            case .undelivered(peer, 3, [11, 12, 13], .unreachable) = Self.apply(
                .undelivered(to: peer, connection: ConnectionID(7), messages, reason: .unreachable), to: context)
        else {
            Issue.record("three messenger messages were not reported")
            return
        }
        guard
            case .none = Self.apply(
                .undelivered(to: peer, connection: ConnectionID(7), [messages[1]], reason: .left), to: context)
        else {
            Issue.record("a membership message was reported as a messenger message")
            return
        }
        guard
            case .undelivered(nil, 4, [1, 2, 3, 4], .left) = Self.apply(
                .unsent(to: nil, channel: Self.channel, count: 4, tags: [1, 2, 3, 4], reason: .left), to: context)
        else {
            Issue.record("unsent messenger messages were not reported")
            return
        }
    }

    @Test("The join timeout ends only a session still waiting; an end by another member reports what is unconfirmed")
    func timeoutAndEnd() {
        let waiting = MessageRouterTests.context()
        guard
            case .over(.joinTimedOut, .joinFailed, false) = Self.apply(.joinTimedOut(after: .seconds(30)), to: waiting)
        else {
            Issue.record("the join timeout did not end a waiting session")
            return
        }
        let joined = MessageRouterTests.context()
        joined.state.update(.joined)
        guard case .none = Self.apply(.joinTimedOut(after: .seconds(30)), to: joined) else {
            Issue.record("a late join timeout ended a joined session")
            return
        }
        guard case .none = Self.apply(.ended(by: nil), to: joined) else {
            Issue.record("this node's own end was treated as another member's")
            return
        }
        let ada = Self.member("ada")
        guard case .over(.invalidated(.ended(let by)), .ended, true) = Self.apply(.ended(by: ada), to: joined) else {
            Issue.record("an end by another member did not end the session")
            return
        }
        #expect(by == Participant(ada))
    }
}
