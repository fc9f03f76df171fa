import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

/// `control.json`: member records and every control message of channel 1 (PROTOCOL.md section 8.2), through
/// `MembershipMessage`: each message is decoded and its fields compared, and encoded from the vector's fields and
/// compared byte for byte. Swift has no coder for a lone member record; records are reached through MEMBER_JOINED,
/// whose body is exactly one record. An unknown type decodes as `.unknown` (ignored, not a violation).
@Suite("Vectors: control.json")
struct ControlVectorTests {
    static let file = "control"
    static let records: CaseFilter = { $0.has("record") && !$0.has("message") }
    static let messages: CaseFilter = { $0.has("message") }
    static let ignored: CaseFilter = { $0.has("ignored") }

    @Test("Every case of control.json is checked (23 cases)")
    func coverage() throws {
        try expectCoverage(
            of: Self.file, count: 23,
            groups: [("record", Self.records), ("message", Self.messages), ("ignored", Self.ignored)])
    }

    @Test("A member record: fields, bytes and binding signature", arguments: VectorFile.names(file, where: records))
    func record(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        let fields = try vector.value("record")
        // MEMBER_JOINED (type 3) carries exactly one record.
        let decoded = try MembershipMessage(decoding: [3] + encoded)
        guard case .memberJoined(let member) = decoded else {
            Issue.record("\(name) did not decode as a record: \(decoded)")
            return
        }
        #expect(memberRecordJSON(member) == fields)
        #expect(member.identity.hasValidBinding)
        let rebuilt = MembershipMessage.memberJoined(try memberRecord(fields)).encoded()
        #expect(rebuilt.first == 3)
        #expect(hexString(rebuilt.dropFirst()) == hexString(encoded))
    }

    @Test("A control message: fields and bytes", arguments: VectorFile.names(file, where: messages))
    func message(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        let fields = try vector.value("message")
        #expect(try UInt64(MembershipMessage.channel.rawValue) == vector.uint64("channel"))
        #expect(membershipJSON(try MembershipMessage(decoding: encoded)) == fields)
        #expect(try hexString(membershipMessage(fields).encoded()) == hexString(encoded))
    }

    @Test("The charter derives the session id and the creator signed it; the removal's signature verifies")
    func boundarySignatures() throws {
        let file = try VectorFile.load(Self.file)
        let session = try #require(SessionID(bytes: try file.document.value("inputs").bytes("charter_session_id")))
        guard case .charter(let charter) = try MembershipMessage(decoding: try file("charter").bytes("encoded")),
            case .memberRemoved(let removal) = try MembershipMessage(
                decoding: try file("member_removed").bytes("encoded"))
        else {
            Issue.record("the vectors do not decode as a charter and a removal")
            return
        }
        #expect(charter.session == session && charter.isValid(for: session))
        #expect(removal.isValid(for: session))
        // The same bytes for another session prove nothing.
        let other = try #require(SessionID(bytes: try file.document.value("inputs").bytes("session_id")))
        #expect(!charter.isValid(for: other) && !removal.isValid(for: other))
    }

    @Test(
        "An unknown control message type is decoded as unknown and ignored",
        arguments: VectorFile.names(file, where: ignored))
    func unknown(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let encoded = try vector.bytes("encoded")
        #expect(try vector.value("ignored") == .bool(true))
        #expect(try UInt64(MembershipMessage.channel.rawValue) == vector.uint64("channel"))
        let decoded = try MembershipMessage(decoding: encoded)
        guard case .unknown(let type) = decoded else {
            Issue.record("\(name) decoded as \(decoded)")
            return
        }
        #expect(type == encoded[0])
    }
}

// MARK: - Control messages in the vector schema

/// A member record in the vector schema.
func memberRecordJSON(_ member: MemberRecord) -> JSON {
    [
        "signing_key": .hex(member.identity.signingKey.bytes), "static_key": .hex(member.identity.agreementKey.bytes),
        "binding_signature": .hex(member.identity.binding), "epoch": .int(member.epoch), "name": .string(member.name),
        "addresses": .array(member.addresses.map(networkAddressJSON)),
    ]
}

/// The ``MemberRecord`` a vector describes.
func memberRecord(_ json: JSON) throws -> MemberRecord {
    MemberRecord(
        identity: PublicIdentity(
            signingKey: try Ed25519PublicKey(bytes: try json.bytes("signing_key")),
            agreementKey: try X25519PublicKey(bytes: try json.bytes("static_key")),
            binding: try json.bytes("binding_signature")),
        name: try json.string("name"), addresses: try json.array("addresses").map(networkAddress),
        epoch: try json.uint64("epoch"))
}

/// An activity record in the vector schema.
func activityJSON(_ activity: ActivityRecord) -> JSON {
    ["clock": .int(activity.clock), "author": .hex(activity.author.bytes), "payload": .hex(activity.payload)]
}

/// The ``ActivityRecord`` a vector describes.
func activityRecord(_ json: JSON) throws -> ActivityRecord {
    ActivityRecord(
        clock: try json.uint64("clock"), author: try Ed25519PublicKey(bytes: try json.bytes("author")),
        payload: try json.bytes("payload"))
}

/// A decoded control message in the vector schema.
func membershipJSON(_ message: MembershipMessage) -> JSON {
    switch message {
    case .joinRequest(let session, let invitation, let member):
        return [
            "type": "join_request", "session_id": .hex(session.bytes), "invitation_id": .int(invitation.rawValue),
            "record": memberRecordJSON(member),
        ]
    case .welcome(let welcome):
        return [
            "type": "welcome", "session_id": .hex(welcome.session.bytes),
            "session_secret": .hex(welcome.sessionSecret.bytes), "clock": .int(welcome.clock),
            "roster": .array(welcome.roster.map(memberRecordJSON)),
            "activity": welcome.activity.map(activityJSON) ?? .null,
            "invitations": .array(
                welcome.invitations.map { ["secret": .hex($0.secret.bytes), "expiry": .int($0.expiresAt)] }),
        ]
    case .memberJoined(let member):
        return ["type": "member_joined", "record": memberRecordJSON(member)]
    case .memberLeft(let signingKey, let epoch):
        return ["type": "member_left", "signing_key": .hex(signingKey.bytes), "epoch": .int(epoch)]
    case .activity(let activity):
        return ["type": "activity", "activity": activityJSON(activity)]
    case .invitationOpened(let grant):
        return ["type": "invitation_opened", "secret": .hex(grant.secret.bytes), "expiry": .int(grant.expiresAt)]
    case .sessionEnded(let by):
        return ["type": "session_ended", "signing_key": .hex(by.bytes)]
    case .charter(let charter):
        return [
            "type": "charter", "creator": .hex(charter.creator.bytes), "nonce": .hex(charter.nonce),
            "policy": .int(UInt64(charter.policy.rawValue)), "signature": .hex(charter.signature),
        ]
    case .memberRemoved(let removal):
        return [
            "type": "member_removed", "author": .hex(removal.author.bytes), "removed": .hex(removal.removed.bytes),
            "signature": .hex(removal.signature),
        ]
    case .admissionKey(let key):
        return [
            "type": "admission_key", "epoch": .int(key.epoch), "author": .hex(key.author.bytes),
            "secret": .hex(key.secret.bytes),
        ]
    case .invitationsRevoked(let ids):
        return ["type": "invitations_revoked", "invitation_ids": .array(ids.map { .int($0.rawValue) })]
    case .askInvitationOpened(let grant):
        return [
            "type": "ask_invitation_opened", "secret": .hex(grant.secret.bytes), "expiry": .int(grant.expiresAt),
        ]
    case .joinWaiting:
        return ["type": "join_waiting"]
    case .joinAsked(let member):
        return ["type": "join_asked", "record": memberRecordJSON(member)]
    case .joinAnswered(let joiner, let admitted):
        return ["type": "join_answered", "joiner": .hex(joiner.bytes), "admitted": .int(admitted ? 1 : 0)]
    case .joinRefused(let reason):
        return ["type": "join_refused", "reason": .int(UInt64(reason.rawValue))]
    case .unknown(let type):
        return ["type": .string("unknown \(type)")]
    }
}

/// The ``MembershipMessage`` a vector describes.
func membershipMessage(_ json: JSON) throws -> MembershipMessage {
    func session() throws -> SessionID {
        guard let id = SessionID(bytes: try json.bytes("session_id")) else {
            throw VectorError.wrongType("session_id", expected: "16 bytes", in: json)
        }
        return id
    }
    func grant(_ json: JSON) throws -> InvitationGrant {
        try InvitationGrant(secret: SecureBytes(try json.bytes("secret")), expiresAt: try json.uint64("expiry"))
    }
    switch try json.string("type") {
    case "join_request":
        return .joinRequest(
            session: try session(), invitation: AdmissionID(try json.uint64("invitation_id")),
            member: try memberRecord(try json.value("record")))
    case "welcome":
        let activity = try json.value("activity")
        return .welcome(
            .init(
                session: try session(), sessionSecret: SecureBytes(try json.bytes("session_secret")),
                clock: try json.uint64("clock"), roster: try json.array("roster").map(memberRecord),
                activity: activity == .null ? nil : try activityRecord(activity),
                invitations: try json.array("invitations").map(grant)))
    case "member_joined":
        return .memberJoined(try memberRecord(try json.value("record")))
    case "member_left":
        return .memberLeft(
            signingKey: try Ed25519PublicKey(bytes: try json.bytes("signing_key")), epoch: try json.uint64("epoch"))
    case "activity":
        return .activity(try activityRecord(try json.value("activity")))
    case "invitation_opened":
        return .invitationOpened(try grant(json))
    case "session_ended":
        return .sessionEnded(by: try Ed25519PublicKey(bytes: try json.bytes("signing_key")))
    case "charter":
        guard let policy = SessionCharter.RemovalPolicy(rawValue: UInt8(try json.uint64("policy"))) else {
            throw VectorError.wrongType("policy", expected: "0 or 1", in: json)
        }
        return .charter(
            SessionCharter(
                creator: try Ed25519PublicKey(bytes: try json.bytes("creator")), nonce: try json.bytes("nonce"),
                policy: policy, signature: try json.bytes("signature")))
    case "member_removed":
        return .memberRemoved(
            MemberRemoval(
                author: try Ed25519PublicKey(bytes: try json.bytes("author")),
                removed: try Ed25519PublicKey(bytes: try json.bytes("removed")), signature: try json.bytes("signature"))
        )
    case "invitations_revoked":
        return .invitationsRevoked(try json.array("invitation_ids").map { AdmissionID(try $0.uint64()) })
    case "ask_invitation_opened":
        return .askInvitationOpened(
            try InvitationGrant(
                secret: SecureBytes(try json.bytes("secret")), expiresAt: try json.uint64("expiry"),
                requiresApproval: true))
    case "join_waiting":
        return .joinWaiting
    case "join_asked":
        return .joinAsked(try memberRecord(try json.value("record")))
    case "join_answered":
        return .joinAnswered(
            joiner: try Ed25519PublicKey(bytes: try json.bytes("joiner")), admitted: try json.uint64("admitted") == 1)
    case "join_refused":
        return .joinRefused(JoinRefusal(rawValue: UInt8(try json.uint64("reason"))) ?? .unspecified)
    case "admission_key":
        return .admissionKey(
            AdmissionKey(
                epoch: try json.uint64("epoch"), author: try Ed25519PublicKey(bytes: try json.bytes("author")),
                secret: SecureBytes(try json.bytes("secret"))))
    case let other:
        throw VectorError.wrongType(other, expected: "control message type", in: json)
    }
}
