import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

/// `tickets.json`: invitation tickets (PROTOCOL.md section 8.1). Valid tickets are parsed with
/// `Invitation(parsing:)` and their fields compared; the same fields are encoded with `Invitation.ticket` and the
/// text and the bytes before base64url (checksum included) compared. Each invalid ticket must throw the
/// `InvitationError` the vector names.
@Suite("Vectors: tickets.json")
struct TicketsVectorTests {
    static let file = "tickets"
    static let valid: CaseFilter = { $0.has("bytes") }
    static let invalid: CaseFilter = { $0.has("error") }
    static let reparsed: CaseFilter = { $0.has("fields") && !$0.has("bytes") }

    @Test("Every case of tickets.json is checked (28 cases)")
    func coverage() throws {
        try expectCoverage(
            of: Self.file, count: 28,
            groups: [("valid", Self.valid), ("invalid", Self.invalid), ("trimmed", Self.reparsed)])
    }

    @Test("A valid ticket: parsed fields, encoded text and bytes", arguments: VectorFile.names(file, where: valid))
    func validTicket(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let text = try vector.string("ticket")
        let fields = try vector.value("fields")
        let bytes = try vector.bytes("bytes")

        let parsed = try Invitation(parsing: text)
        #expect(try ticketJSON(parsed, text: text) == fields)

        let built = try invitation(from: fields)
        #expect(built.ticket == text)
        let raw = try Invitation.decodeBase64URL(String(built.ticket.dropFirst(Invitation.prefix.count)))
        #expect(hexString(raw) == hexString(bytes))
        #expect(try hexString(raw.suffix(Invitation.checksumLength)) == vector.string("checksum"))

        if vector.has("expired_at_or_after") {
            let expiry = TimeInterval(try vector.uint64("expired_at_or_after"))
            #expect(parsed.isExpired(at: Date(timeIntervalSince1970: expiry)))
            #expect(!parsed.isExpired(at: Date(timeIntervalSince1970: expiry - 1)))
        }
    }

    @Test("Surrounding whitespace is ignored", arguments: VectorFile.names(file, where: reparsed))
    func trimmed(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let text = try vector.string("ticket")
        #expect(try ticketJSON(try Invitation(parsing: text), text: text) == vector.value("fields"))
    }

    @Test("An invalid ticket throws the named InvitationError", arguments: VectorFile.names(file, where: invalid))
    func invalidTicket(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let expected = try vector.string("error")
        do {
            let parsed = try Invitation(parsing: try vector.string("ticket"))
            Issue.record("\(name) parsed as \(parsed)")
        } catch let error as InvitationError {
            #expect(error.vectorName == expected, "\(name): Swift threw \(error)")
        }
    }
}

extension InvitationError {
    /// The vector files' name for this error (PROTOCOL.md's `InvitationError` kinds are the Swift case names).
    var vectorName: String {
        switch self {
        case .notATicket: "notATicket"
        case .badEncoding: "badEncoding"
        case .truncated: "truncated"
        case .checksumMismatch: "checksumMismatch"
        case .unsupportedVersion: "unsupportedVersion"
        case .invalidName: "invalidName"
        case .noMembers: "noMembers"
        case .tooManyMembers: "tooManyMembers"
        case .invalidAddress: "invalidAddress"
        case .trailingBytes: "trailingBytes"
        case .invalidTurnServer: "invalidTurnServer"
        }
    }
}

/// A parsed ticket in the vector schema. Swift keeps no version field; `version` is the first byte of the decoded
/// ticket `text`.
func ticketJSON(_ invitation: Invitation, text: String) throws -> JSON {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    let raw = try Invitation.decodeBase64URL(String(trimmed.dropFirst(Invitation.prefix.count)))
    let members: [JSON] = invitation.members.map { member in
        guard case .object(var address) = networkAddressJSON(member.address) else { return .null }
        address["static_key"] = .hex(member.staticKey.bytes)
        // The first address is the member's own fields; version 3 lists the others apart.
        if member.addresses.count > 1 {
            address["more_addresses"] = .array(member.addresses.dropFirst().map(networkAddressJSON))
        }
        return .object(address)
    }
    var fields: [String: JSON] = [
        "version": .int(raw[0]), "session_id": .hex(invitation.session.bytes),
        "invitation_secret": .hex(invitation.secret.bytes),
        "expiry": .int(UInt64(invitation.expiresAt.timeIntervalSince1970)),
        "inviter_signing_key": .hex(invitation.inviterSigningKey.bytes),
        "inviter_name": .string(invitation.inviterName),
        "members": .array(members), "relays": .array(invitation.relays.map(networkAddressJSON)),
    ]
    // Only version 3 names TURN servers, and only its vectors have the field.
    if raw[0] == 3 {
        fields["turn_servers"] = .array(
            invitation.turnServers.map { server in
                guard case .object(var entry) = networkAddressJSON(server.address) else { return .null }
                entry["transport"] = .string(server.transport.rawValue)
                entry["username"] = .string(server.credentials.username)
                entry["password"] = .string(server.credentials.password)
                return .object(entry)
            })
    }
    return .object(fields)
}

/// The `Invitation` a vector's fields describe (its version follows from whether it names relays).
func invitation(from fields: JSON) throws -> Invitation {
    Invitation(
        session: try #require(SessionID(bytes: try fields.bytes("session_id"))),
        secret: SecureBytes(try fields.bytes("invitation_secret")),
        expiresAt: Date(timeIntervalSince1970: TimeInterval(try fields.uint64("expiry"))),
        inviterSigningKey: try Ed25519PublicKey(bytes: try fields.bytes("inviter_signing_key")),
        inviterName: try fields.string("inviter_name"),
        members: try fields.array("members").map {
            Invitation.Member(
                staticKey: try X25519PublicKey(bytes: try $0.bytes("static_key")),
                addresses: [try networkAddress($0)]
                    + (try ($0.has("more_addresses") ? $0.array("more_addresses") : []).map(networkAddress)))
        },
        relays: try fields.array("relays").map(networkAddress),
        turnServers: try (fields.has("turn_servers") ? fields.array("turn_servers") : []).map { entry in
            TurnServer(
                address: try networkAddress(entry),
                transport: try #require(TurnTransport(rawValue: try entry.string("transport"))),
                credentials: TurnCredentials(
                    username: try entry.string("username"), password: try entry.string("password")))
        })
}
