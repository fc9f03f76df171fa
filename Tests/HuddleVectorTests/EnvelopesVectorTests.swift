import Testing

@testable import Huddle

/// `envelopes.json`: messenger envelopes on channel 16 (PROTOCOL.md section 8.3), both type-name length forms, through
/// `MessageEnvelope`: decoded fields compared, and the fields encoded and compared byte for byte.
@Suite("Vectors: envelopes.json")
struct EnvelopesVectorTests {
    static let file = "envelopes"
    static let envelopes: CaseFilter = { $0.has("fields") }

    @Test("Every case of envelopes.json is checked (7 cases)")
    func coverage() throws {
        try expectCoverage(of: Self.file, count: 7, groups: [("envelope", Self.envelopes)])
    }

    @Test("An envelope: fields and bytes", arguments: VectorFile.names(file, where: envelopes))
    func envelope(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        let fields = try vector.value("fields")
        #expect(try UInt64(SessionEngine.messengerChannel.rawValue) == vector.uint64("channel"))

        let decoded = try #require(MessageEnvelope(decoding: encoded))
        #expect(envelopeJSON(decoded) == fields)

        let kind = try #require(MessageEnvelope.Kind(rawValue: UInt8(try fields.uint64("kind"))))
        let built = MessageEnvelope(
            kind: kind, typeName: try fields.string("type_name"), payload: try fields.bytes("payload"))
        #expect(try fields.uint64("version") == UInt64(MessageEnvelope.version))
        #expect(hexString(built.encoded()) == hexString(encoded))
    }
}

/// A decoded envelope in the vector schema (Swift checks the version byte and does not keep it: it is the one
/// version Swift reads).
func envelopeJSON(_ envelope: MessageEnvelope) -> JSON {
    [
        "version": .int(MessageEnvelope.version), "kind": .int(envelope.kind.rawValue),
        "type_name": .string(envelope.typeName), "payload": .hex(envelope.payload),
    ]
}
