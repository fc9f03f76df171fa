import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// The messages members exchange on the control channel (``MembershipMessage/channel``) to form and keep a session:
/// each travels as one reliable message over the pairwise encrypted connection, so the sender is authenticated by
/// the connection it arrives on.
///
/// Encoding (all integers little-endian, `varint` as in frames): one type byte, then
///
/// | type | message | fields |
/// |---|---|---|
/// | 1 | JOIN_REQUEST | session id (16), invitation id (u64), member record |
/// | 2 | WELCOME | session id (16), session secret (32), clock (varint), roster count (varint) + records, activity flag (u8) + activity, invitation count (u8) + (secret (32), expiry (u64)) each |
/// | 3 | MEMBER_JOINED | member record |
/// | 4 | MEMBER_LEFT | signing key (32), epoch (varint) |
/// | 5 | ACTIVITY | activity |
/// | 6 | INVITATION_OPENED | secret (32), expiry (u64) |
/// | 7 | SESSION_ENDED | signing key (32) of the member who ended it |
/// | 8 | CHARTER | creator signing key (32), nonce (16), removal policy (u8: 0 creator only, 1 any member), signature (64) |
/// | 9 | MEMBER_REMOVED | author signing key (32), removed signing key (32), signature (64) |
/// | 10 | ADMISSION_KEY | epoch (varint), author signing key (32), secret (32) |
/// | 11 | INVITATIONS_REVOKED | count (varint, 1...1024) + invitation ids (u64) |
/// | 12 | ASK_INVITATION_OPENED | secret (32), expiry (u64) |
/// | 13 | JOIN_WAITING | (none) |
/// | 14 | JOIN_ASKED | member record |
/// | 15 | JOIN_ANSWERED | joiner signing key (32), admitted (u8: 1 admitted, 0 denied) |
/// | 16 | JOIN_REFUSED | reason (u8: 1 denied, 2 invitation closed, 3 unanswered) |
///
/// A member record is signing key (32), Noise key (32), binding signature (64), epoch (varint), name length (varint)
/// + UTF-8, address count (u8) + addresses (family u8 4 or 6, 4 or 16 address bytes, port u16). An activity is clock
/// (varint), author signing key (32), payload length (varint) + payload. Unknown type bytes decode as
/// ``unknown(type:)`` so that a newer peer's additions are skipped, not fatal.
public enum MembershipMessage: Sendable {
    /// The channel membership messages travel on (a control channel: sent before messages and bulk data).
    public static let channel = ChannelID(1)

    /// A joiner asks the member it reached to let it in.
    case joinRequest(session: SessionID, invitation: AdmissionID, member: MemberRecord)
    /// The sponsor's answer: everything a new member needs.
    case welcome(Welcome)
    /// A sponsor tells every member about a new one.
    case memberJoined(MemberRecord)
    /// A member says it leaves (only the member itself may send this).
    case memberLeft(signingKey: Ed25519PublicKey, epoch: UInt64)
    /// A member changes the shared activity (only the author may send it).
    case activity(ActivityRecord)
    /// A member opened an invitation; every member accepts joiners under it until it expires.
    case invitationOpened(InvitationGrant)
    /// A member ended the session for everyone.
    case sessionEnded(by: Ed25519PublicKey)
    /// Who created the session and who may remove members, signed by the creator.
    case charter(SessionCharter)
    /// A member was removed, signed by the member who removed it.
    case memberRemoved(MemberRemoval)
    /// The session admission's current secret (sent only over members' pairwise connections).
    case admissionKey(AdmissionKey)
    /// Invitations a member revoked (or a removal closed): they close everywhere and never open again.
    case invitationsRevoked([AdmissionID])
    /// A member opened an ask-to-join invitation: a joiner under it waits until a member admits it. A type of its own,
    /// so a member of an older version (which skips it) never lets such a joiner in unasked.
    case askInvitationOpened(InvitationGrant)
    /// The sponsor tells a joiner its request waits for a member's answer.
    case joinWaiting
    /// The sponsor tells every member that a joiner asks to join (its record as its request named it).
    case joinAsked(MemberRecord)
    /// A member's answer to an ask-to-join request, to every member.
    case joinAnswered(joiner: Ed25519PublicKey, admitted: Bool)
    /// The sponsor turns a joiner away; its join fails.
    case joinRefused(JoinRefusal)
    /// A message type this version does not know; skipped.
    case unknown(type: UInt8)

    /// The announcement of open invitation `grant`: INVITATION_OPENED, or ASK_INVITATION_OPENED for an ask-to-join one.
    static func opened(_ grant: InvitationGrant) -> MembershipMessage {
        grant.requiresApproval ? .askInvitationOpened(grant) : .invitationOpened(grant)
    }

    /// The contents of a WELCOME.
    public struct Welcome: Sendable {
        /// The session.
        public var session: SessionID
        /// The session secret members' credentials derive from.
        public var sessionSecret: SecureBytes
        /// The sponsor's logical clock.
        public var clock: UInt64
        /// Every current member, the newcomer included (with its assigned epoch).
        public var roster: [MemberRecord]
        /// The current activity, if one was set.
        public var activity: ActivityRecord?
        /// Open invitations.
        public var invitations: [InvitationGrant]

        /// A WELCOME.
        public init(
            session: SessionID, sessionSecret: SecureBytes, clock: UInt64, roster: [MemberRecord],
            activity: ActivityRecord?, invitations: [InvitationGrant]
        ) {
            self.session = session
            self.sessionSecret = sessionSecret
            self.clock = clock
            self.roster = roster
            self.activity = activity
            self.invitations = invitations
        }
    }

    // MARK: - Encoding

    /// The encoded message.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .joinRequest(let session, let invitation, let member):
            out.append(1)
            out += session.bytes
            Self.appendUInt64(invitation.rawValue, to: &out)
            Self.append(member, to: &out)
        case .welcome(let welcome):
            out.append(2)
            out += welcome.session.bytes
            out += welcome.sessionSecret.copyToArray()
            Self.appendVarInt(welcome.clock, to: &out)
            Self.appendVarInt(UInt64(welcome.roster.count), to: &out)
            for member in welcome.roster { Self.append(member, to: &out) }
            if let activity = welcome.activity {
                out.append(1)
                Self.append(activity, to: &out)
            } else {
                out.append(0)
            }
            out.append(UInt8(clamping: welcome.invitations.count))
            for grant in welcome.invitations.prefix(255) { Self.append(grant, to: &out) }
        case .memberJoined(let member):
            out.append(3)
            Self.append(member, to: &out)
        case .memberLeft(let signingKey, let epoch):
            out.append(4)
            out += signingKey.bytes
            Self.appendVarInt(epoch, to: &out)
        case .activity(let activity):
            out.append(5)
            Self.append(activity, to: &out)
        case .invitationOpened(let grant):
            out.append(6)
            Self.append(grant, to: &out)
        case .sessionEnded(let by):
            out.append(7)
            out += by.bytes
        case .charter(let charter):
            out.append(8)
            out += charter.creator.bytes
            out += charter.nonce
            out.append(charter.policy.rawValue)
            out += charter.signature
        case .memberRemoved(let removal):
            out.append(9)
            out += removal.author.bytes
            out += removal.removed.bytes
            out += removal.signature
        case .admissionKey(let key):
            out.append(10)
            Self.appendVarInt(key.epoch, to: &out)
            out += key.author.bytes
            out += key.secret.copyToArray()
        case .invitationsRevoked(let ids):
            out.append(11)
            let listed = ids.prefix(ProtocolLimits.maxRevokedInvitations)
            Self.appendVarInt(UInt64(listed.count), to: &out)
            for id in listed { Self.appendUInt64(id.rawValue, to: &out) }
        case .askInvitationOpened(let grant):
            out.append(12)
            Self.append(grant, to: &out)
        case .joinWaiting:
            out.append(13)
        case .joinAsked(let member):
            out.append(14)
            Self.append(member, to: &out)
        case .joinAnswered(let joiner, let admitted):
            out.append(15)
            out += joiner.bytes
            out.append(admitted ? 1 : 0)
        case .joinRefused(let reason):
            out.append(16)
            out.append(reason.rawValue)
        case .unknown(let type):
            out.append(type)
        }
        return out
    }

    private static func appendVarInt(_ value: UInt64, to out: inout [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: 8)
        let length = buffer.withUnsafeMutableBytes { raw -> Int in
            var writer = ByteWriter(raw)
            // Values here are counts, epochs and lengths far below 2^62, the varint maximum.
            try? writer.writeVarInt(min(value, VarInt.max))
            return writer.bytesWritten
        }
        out += buffer[0..<length]
    }

    private static func appendUInt64(_ value: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    private static func append(_ member: MemberRecord, to out: inout [UInt8]) {
        out += member.identity.signingKey.bytes
        out += member.identity.agreementKey.bytes
        out += member.identity.binding
        appendVarInt(member.epoch, to: &out)
        let name = Array(member.name.utf8.prefix(ProtocolLimits.maxMemberNameBytes))
        appendVarInt(UInt64(name.count), to: &out)
        out += name
        let addresses = member.addresses.prefix(ProtocolLimits.maxMemberAddresses)
        out.append(UInt8(addresses.count))
        for address in addresses {
            out.append(address.family == .ipv4 ? 4 : 6)
            out += address.addressBytes
            out.append(UInt8(truncatingIfNeeded: address.port))
            out.append(UInt8(truncatingIfNeeded: address.port >> 8))
        }
    }

    private static func append(_ activity: ActivityRecord, to out: inout [UInt8]) {
        appendVarInt(activity.clock, to: &out)
        out += activity.author.bytes
        appendVarInt(UInt64(activity.payload.count), to: &out)
        out += activity.payload
    }

    private static func append(_ grant: InvitationGrant, to out: inout [UInt8]) {
        out += grant.secret.copyToArray()
        appendUInt64(grant.expiresAt, to: &out)
    }

    // MARK: - Decoding

    /// Decodes one message, checking every length against its limit before reading it.
    public init(decoding bytes: [UInt8]) throws(MembershipError) {
        guard bytes.count <= ProtocolLimits.maxMembershipMessageBytes else {
            throw .limitExceeded(what: "membership message", limit: ProtocolLimits.maxMembershipMessageBytes)
        }
        let result: Result<MembershipMessage, MembershipError> = bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            do {
                return .success(try Self.decode(&reader))
            } catch let error as MembershipError {
                return .failure(error)
            } catch {
                return .failure(.malformed("\(error)"))
            }
        }
        self = try result.get()
    }

    private static func decode(_ reader: inout ByteReader) throws -> MembershipMessage {
        let type = try reader.readUInt8()
        let message: MembershipMessage
        switch type {
        case 1:
            let session = try readSession(&reader)
            let invitation = AdmissionID(try reader.readUInt64LE())
            message = .joinRequest(session: session, invitation: invitation, member: try readMember(&reader))
        case 2:
            let session = try readSession(&reader)
            let secret = SecureBytes(try reader.readArray(count: 32))
            let clock = try reader.readVarInt()
            let count = try reader.readVarInt()
            guard count <= UInt64(ProtocolLimits.maxRosterEntries) else {
                throw MembershipError.limitExceeded(what: "roster", limit: ProtocolLimits.maxRosterEntries)
            }
            var roster: [MemberRecord] = []
            for _ in 0..<count { roster.append(try readMember(&reader)) }
            let activity = try reader.readUInt8() == 1 ? try readActivity(&reader) : nil
            let invitationCount = Int(try reader.readUInt8())
            guard invitationCount <= ProtocolLimits.maxAdmissions else {
                throw MembershipError.limitExceeded(what: "open invitations", limit: ProtocolLimits.maxAdmissions)
            }
            var invitations: [InvitationGrant] = []
            for _ in 0..<invitationCount { invitations.append(try readGrant(&reader)) }
            message = .welcome(
                Welcome(
                    session: session, sessionSecret: secret, clock: clock, roster: roster, activity: activity,
                    invitations: invitations))
        case 3:
            message = .memberJoined(try readMember(&reader))
        case 4:
            message = .memberLeft(signingKey: try readSigningKey(&reader), epoch: try reader.readVarInt())
        case 5:
            message = .activity(try readActivity(&reader))
        case 6:
            message = .invitationOpened(try readGrant(&reader))
        case 7:
            message = .sessionEnded(by: try readSigningKey(&reader))
        case 8:
            let creator = try readSigningKey(&reader)
            let nonce = try reader.readArray(count: SessionCharter.nonceLength)
            let policyByte = try reader.readUInt8()
            guard let policy = SessionCharter.RemovalPolicy(rawValue: policyByte) else {
                throw MembershipError.malformed("removal policy \(policyByte)")
            }
            let signature = try reader.readArray(count: Ed25519PrivateKey.signatureLength)
            message = .charter(SessionCharter(creator: creator, nonce: nonce, policy: policy, signature: signature))
        case 9:
            let author = try readSigningKey(&reader)
            let removed = try readSigningKey(&reader)
            let signature = try reader.readArray(count: Ed25519PrivateKey.signatureLength)
            message = .memberRemoved(MemberRemoval(author: author, removed: removed, signature: signature))
        case 10:
            let epoch = try reader.readVarInt()
            let author = try readSigningKey(&reader)
            message = .admissionKey(
                AdmissionKey(epoch: epoch, author: author, secret: SecureBytes(try reader.readArray(count: 32))))
        case 11:
            let count = try reader.readVarInt()
            guard count >= 1, count <= UInt64(ProtocolLimits.maxRevokedInvitations) else {
                throw MembershipError.limitExceeded(
                    what: "revoked invitations", limit: ProtocolLimits.maxRevokedInvitations)
            }
            var ids: [AdmissionID] = []
            for _ in 0..<count { ids.append(AdmissionID(try reader.readUInt64LE())) }
            message = .invitationsRevoked(ids)
        case 12:
            message = .askInvitationOpened(try readGrant(&reader, requiresApproval: true))
        case 13:
            message = .joinWaiting
        case 14:
            message = .joinAsked(try readMember(&reader))
        case 15:
            let joiner = try readSigningKey(&reader)
            let verdict = try reader.readUInt8()
            guard verdict <= 1 else { throw MembershipError.malformed("join answer \(verdict)") }
            message = .joinAnswered(joiner: joiner, admitted: verdict == 1)
        case 16:
            message = .joinRefused(JoinRefusal(byte: try reader.readUInt8()))
        default:
            return .unknown(type: type)
        }
        try reader.expectEnd()
        return message
    }

    private static func readSession(_ reader: inout ByteReader) throws -> SessionID {
        SessionID(bytes: try reader.readArray(count: SessionID.length))!
    }

    private static func readSigningKey(_ reader: inout ByteReader) throws -> Ed25519PublicKey {
        try Ed25519PublicKey(bytes: try reader.readArray(count: 32))
    }

    private static func readMember(_ reader: inout ByteReader) throws -> MemberRecord {
        let signingKey = try readSigningKey(&reader)
        let agreementKey = try X25519PublicKey(bytes: try reader.readArray(count: 32))
        let binding = try reader.readArray(count: 64)
        let epoch = try reader.readVarInt()
        let nameLength = try reader.readVarInt()
        guard nameLength <= UInt64(ProtocolLimits.maxMemberNameBytes) else {
            throw MembershipError.limitExceeded(what: "member name", limit: ProtocolLimits.maxMemberNameBytes)
        }
        guard let name = String(validating: try reader.readArray(count: Int(nameLength)), as: UTF8.self) else {
            throw MembershipError.malformed("member name is not UTF-8")
        }
        let addressCount = Int(try reader.readUInt8())
        guard addressCount <= ProtocolLimits.maxMemberAddresses else {
            throw MembershipError.limitExceeded(what: "member addresses", limit: ProtocolLimits.maxMemberAddresses)
        }
        var addresses: [NetworkAddress] = []
        for _ in 0..<addressCount {
            let family = try reader.readUInt8()
            let address: NetworkAddress?
            switch family {
            case 4:
                let bytes = try reader.readArray(count: 4)
                address = NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: try reader.readUInt16LE())
            case 6:
                let bytes = try reader.readArray(count: 16)
                address = NetworkAddress(ipv6: bytes, port: try reader.readUInt16LE())
            default:
                address = nil
            }
            guard let address else { throw MembershipError.malformed("address family \(family)") }
            addresses.append(address)
        }
        return MemberRecord(
            identity: PublicIdentity(signingKey: signingKey, agreementKey: agreementKey, binding: binding), name: name,
            addresses: addresses, epoch: epoch)
    }

    private static func readActivity(_ reader: inout ByteReader) throws -> ActivityRecord {
        let clock = try reader.readVarInt()
        let author = try readSigningKey(&reader)
        let length = try reader.readVarInt()
        guard length <= UInt64(ProtocolLimits.maxActivityBytes) else {
            throw MembershipError.limitExceeded(what: "activity", limit: ProtocolLimits.maxActivityBytes)
        }
        return ActivityRecord(clock: clock, author: author, payload: try reader.readArray(count: Int(length)))
    }

    private static func readGrant(_ reader: inout ByteReader, requiresApproval: Bool = false) throws -> InvitationGrant
    {
        let secret = SecureBytes(try reader.readArray(count: 32))
        return try InvitationGrant(
            secret: secret, expiresAt: try reader.readUInt64LE(), requiresApproval: requiresApproval)
    }
}
