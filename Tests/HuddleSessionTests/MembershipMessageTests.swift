import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire
import Testing

@Suite("Membership messages")
struct MembershipMessageTests {
    static func member(_ seed: UInt64, name: String = "ada", epoch: UInt64 = 3) -> MemberRecord {
        var random = ChaChaRandomGenerator(seed: seed)
        let identity = Identity(using: &random)
        return MemberRecord(
            identity: identity.publicIdentity, name: name,
            addresses: [
                NetworkAddress(ipv4: 127, 0, 0, 1, port: 4242),
                NetworkAddress(ipv6: [UInt8](repeating: 0, count: 15) + [1], port: 9)!,
            ], epoch: epoch)
    }

    static let session = SessionID(bytes: [UInt8](0..<16))!

    @Test("Every message type round-trips byte for byte")
    func roundTrip() throws {
        let grant = try InvitationGrant(secret: SecureBytes([UInt8](repeating: 7, count: 32)), expiresAt: 1_800_000_000)
        let activity = ActivityRecord(clock: 9, author: Self.member(1).identity.signingKey, payload: [1, 2, 3])
        let messages: [MembershipMessage] = [
            .joinRequest(session: Self.session, invitation: grant.id, member: Self.member(1)),
            .welcome(
                .init(
                    session: Self.session, sessionSecret: SecureBytes([UInt8](repeating: 1, count: 32)), clock: 12,
                    roster: [Self.member(1), Self.member(2, name: "", epoch: 0)], activity: activity,
                    invitations: [grant])),
            .memberJoined(Self.member(3)),
            .memberLeft(signingKey: Self.member(1).identity.signingKey, epoch: 4),
            .activity(activity),
            .invitationOpened(grant),
            .sessionEnded(by: Self.member(2).identity.signingKey),
            .askInvitationOpened(
                try InvitationGrant(secret: grant.secret, expiresAt: grant.expiresAt, requiresApproval: true)),
            .joinWaiting,
            .joinAsked(Self.member(4)),
            .joinAnswered(joiner: Self.member(4).identity.signingKey, admitted: true),
            .joinAnswered(joiner: Self.member(4).identity.signingKey, admitted: false),
            .joinRefused(.denied), .joinRefused(.invitationClosed), .joinRefused(.unanswered),
        ]
        for message in messages {
            let bytes = message.encoded()
            let decoded = try MembershipMessage(decoding: bytes)
            #expect(decoded.encoded() == bytes)
        }
        guard case .joinRequest(_, _, let member) = try MembershipMessage(decoding: messages[0].encoded()) else {
            Issue.record("not a join request")
            return
        }
        #expect(member == Self.member(1))
        #expect(member.identity.hasValidBinding)
    }

    @Test("Unknown types are skipped, not errors; truncation and trailing bytes are malformed")
    func unknownAndDamaged() throws {
        guard case .unknown(let type) = try MembershipMessage(decoding: [0x42, 1, 2, 3]) else {
            Issue.record("expected unknown")
            return
        }
        #expect(type == 0x42)
        let bytes = MembershipMessage.memberJoined(Self.member(1)).encoded()
        for cut in [1, 10, 100, bytes.count - 1] {
            #expect(throws: MembershipError.self) { try MembershipMessage(decoding: Array(bytes.prefix(cut))) }
        }
        #expect(throws: MembershipError.self) { try MembershipMessage(decoding: bytes + [0]) }
        // A join answer is 0 or 1; a refusal reason this version does not know still refuses.
        let answer = MembershipMessage.joinAnswered(joiner: Self.member(1).identity.signingKey, admitted: true)
        #expect(throws: MembershipError.self) { try MembershipMessage(decoding: answer.encoded().dropLast() + [2]) }
        guard case .joinRefused(.unspecified) = try MembershipMessage(decoding: [16, 200]) else {
            Issue.record("an unknown refusal reason did not decode as unspecified")
            return
        }
        // Only a grant that arrived as ASK_INVITATION_OPENED asks for approval.
        guard
            case .askInvitationOpened(let grant) = try MembershipMessage(
                decoding: [12] + [UInt8](repeating: 7, count: 40)),
            case .invitationOpened(let plain) = try MembershipMessage(decoding: [6] + [UInt8](repeating: 7, count: 40))
        else {
            Issue.record("invitation announcements did not decode")
            return
        }
        #expect(grant.requiresApproval && !plain.requiresApproval)
    }

    @Test("A 64-byte name is accepted and 65 refused; 8 addresses accepted and 9 refused, before reading them")
    func limits() throws {
        let name64 = String(repeating: "n", count: 64)
        let ok = MembershipMessage.memberJoined(Self.member(1, name: name64)).encoded()
        #expect(throws: Never.self) { try MembershipMessage(decoding: ok) }
        // Patch the name length varint (one byte at offset 1 + 32 + 32 + 64 + 1) to 65.
        var long = ok
        let nameLengthOffset = 1 + 32 + 32 + 64 + 1
        #expect(long[nameLengthOffset] == 0x40 && long[nameLengthOffset + 1] == 64)
        long[nameLengthOffset + 1] = 65
        #expect(throws: MembershipError.limitExceeded(what: "member name", limit: 64)) {
            try MembershipMessage(decoding: long)
        }
        var record = Self.member(1)
        record.addresses = (0..<8).map { NetworkAddress(ipv4: 10, 0, 0, UInt8($0), port: 1) }
        var bytes = MembershipMessage.memberJoined(record).encoded()
        #expect(throws: Never.self) { try MembershipMessage(decoding: bytes) }
        let countOffset = bytes.count - 8 * 7 - 1
        #expect(bytes[countOffset] == 8)
        bytes[countOffset] = 9
        #expect(throws: MembershipError.limitExceeded(what: "member addresses", limit: 8)) {
            try MembershipMessage(decoding: bytes)
        }
    }

    @Test("A roster count above 256 is refused before any record is read")
    func rosterLimit() throws {
        var bytes: [UInt8] = [2] + Self.session.bytes + [UInt8](repeating: 0, count: 32) + [0]
        bytes += [0x41, 0x01]  // varint 257
        #expect(throws: MembershipError.limitExceeded(what: "roster", limit: 256)) {
            try MembershipMessage(decoding: bytes)
        }
    }

    @Test("The activity register converges: larger clock wins, then the larger author key")
    func activityOrder() {
        let a = Self.member(1).identity.signingKey
        let b = Self.member(2).identity.signingKey
        let (low, high) = a.bytes.lexicographicallyPrecedes(b.bytes) ? (a, b) : (b, a)
        #expect(
            ActivityRecord(clock: 2, author: low, payload: []).supersedes(.init(clock: 1, author: high, payload: [])))
        #expect(
            ActivityRecord(clock: 2, author: high, payload: []).supersedes(.init(clock: 2, author: low, payload: [])))
        #expect(
            !ActivityRecord(clock: 2, author: low, payload: []).supersedes(.init(clock: 2, author: high, payload: [])))
    }
}
