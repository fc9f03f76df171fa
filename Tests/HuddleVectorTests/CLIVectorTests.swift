import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire
import Testing

@testable import Huddle
@testable import huddle

/// `cli.json`: the `huddle` CLI's application messages (PROTOCOL.md Appendix A), with the CLI's own types
/// (`ChatActivity`, `ChatLine`, `AttachmentInfo` of the `huddle` executable) and the library's coders
/// (`ActivityCoding`, `MessageTypeName`, `MessageEnvelope`, `MembershipMessage`, `OwnedFrame`). Application JSON is
/// compared as JSON (keys and values), which is what the appendix makes normative; everything around it byte for
/// byte.
@Suite("Vectors: cli.json")
struct CLIVectorTests {
    static let file = "cli"

    @Test("Every case of cli.json is checked (5 cases)")
    func coverage() throws {
        let named: (String) -> CaseFilter = { name in { (try? $0.string("name")) == name } }
        try expectCoverage(
            of: Self.file, count: 5,
            groups: [
                ("activity payload", named("activity_payload")), ("activity message", named("activity_message")),
                ("chat line", named("chat_line")), ("chat line frame", named("chat_line_frame")),
                ("attachment metadata", named("attachment_metadata")),
            ])
    }

    @Test("The activity `huddle host` sets")
    func activityPayload() throws {
        let vector = try VectorFile.load(Self.file)("activity_payload")
        let encoded = try vector.bytes("encoded")
        let expected = try vector.value("json")
        #expect(try parseJSON(encoded) == expected)
        // Swift's encoding of the CLI's activity, compared as JSON.
        let topic = try expected.value("activity").string("topic")
        #expect(try parseJSON(ActivityCoding.encode(ChatActivity(topic: topic))) == expected)
        // The vector's bytes, read as the CLI reads them.
        #expect(ActivityCoding.identifier(of: encoded) == ChatActivity.activityIdentifier)
        #expect(try ActivityCoding.decode(encoded, as: ChatActivity.self).topic == topic)
    }

    @Test("That payload in an ACTIVITY control message")
    func activityMessage() throws {
        let vector = try VectorFile.load(Self.file)("activity_message")
        let encoded = try vector.bytes("encoded")
        let activity = try vector.value("activity")
        #expect(try UInt64(MembershipMessage.channel.rawValue) == vector.uint64("channel"))
        #expect(try activity.string("payload") == VectorFile.load(Self.file)("activity_payload").string("encoded"))
        #expect(membershipJSON(try MembershipMessage(decoding: encoded)) == ["type": "activity", "activity": activity])
        #expect(hexString(MembershipMessage.activity(try activityRecord(activity)).encoded()) == hexString(encoded))
    }

    @Test("A chat line: a codable envelope named huddle.ChatLine")
    func chatLine() throws {
        let vector = try VectorFile.load(Self.file)("chat_line")
        let encoded = try vector.bytes("encoded")
        let typeName = try vector.string("type_name")
        #expect(try UInt64(SessionEngine.messengerChannel.rawValue) == vector.uint64("channel"))
        // The name the library gives the CLI's type.
        #expect(MessageTypeName.of(ChatLine.self) == typeName)

        let envelope = try #require(MessageEnvelope(decoding: encoded))
        #expect(envelope.kind == .codable)
        #expect(envelope.typeName == typeName)
        #expect(try parseJSON(envelope.payload) == vector.value("json"))
        let text = try vector.value("json").string("text")
        #expect(try JSONDecoder().decode(ChatLine.self, from: Data(envelope.payload)).text == text)

        // What Messenger.send writes: the same header, the JSONEncoder payload.
        let payload = Array(try JSONEncoder().encode(ChatLine(text: text)))
        #expect(try parseJSON(payload) == vector.value("json"))
        let built = MessageEnvelope(kind: .codable, typeName: MessageTypeName.of(ChatLine.self), payload: payload)
        let header = built.encoded().dropLast(payload.count)
        #expect(hexString(header) == hexString(encoded.dropLast(envelope.payload.count)))
    }

    @Test("The chat line as message 0 of channel 16")
    func chatLineFrame() throws {
        let vector = try VectorFile.load(Self.file)("chat_line_frame")
        let encoded = try vector.bytes("encoded")
        let line = try VectorFile.load(Self.file)("chat_line").bytes("encoded")
        let frame: OwnedFrame = .message(
            channel: SessionEngine.messengerChannel, sequence: MessageSequence(0), offset: 0, totalLength: line.count,
            data: line)
        #expect(try decodeOwned(encoded) == [frame])
        #expect(try hexString(frame.encoded()) == hexString(encoded))
    }

    @Test("A shared file's metadata")
    func attachmentMetadata() throws {
        let vector = try VectorFile.load(Self.file)("attachment_metadata")
        let encoded = try vector.bytes("encoded")
        let expected = try vector.value("json")
        #expect(try parseJSON(encoded) == expected)
        let name = try expected.string("name")
        // Journal encodes metadata with JSONEncoder; Attachment.loadMetadata decodes with JSONDecoder.
        #expect(try parseJSON(Array(JSONEncoder().encode(AttachmentInfo(name: name)))) == expected)
        #expect(try JSONDecoder().decode(AttachmentInfo.self, from: Data(encoded)).name == name)
    }
}

/// Application JSON bytes as a ``JSON`` value (keys and values, not layout).
func parseJSON(_ bytes: [UInt8]) throws -> JSON {
    try JSONDecoder().decode(JSON.self, from: Data(bytes))
}
