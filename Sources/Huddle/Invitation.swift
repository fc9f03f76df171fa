import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// A ticket that lets one more device join a session: text to copy into a chat or a terminal.
///
/// A ticket names the session, carries a fresh 32-byte invitation secret (the joiner's handshake credentials derive
/// from it), when it expires, the inviting member's identity, and up to eight members with their Noise keys and
/// addresses (any of them can let the joiner in, so a ticket keeps working after its inviter left). It ends in a
/// checksum, so a mistyped or truncated ticket is refused before any network traffic.
///
/// Format (docs/PROTOCOL.md §8.1): `huddle:` followed by unpadded base64url of: version (1 byte: 1, 2 when the
/// ticket names relays, 3 when it names TURN servers), session id (16), invitation secret (32), expiry (u64
/// little-endian, seconds since 1970), inviter signing key (32), inviter name (1-byte length, at most 64 UTF-8 bytes),
/// member count (1 byte, 1-8), then per member its Noise key (32), in version 3 an address count (1 byte, 1-4), and
/// each address as family (4 or 6), address (4 or 16 bytes) and port (u16 little-endian; versions 1 and 2 carry
/// one); in versions 2 and 3 a relay count (1 byte, 1-4; 0-4 in version 3) and per relay its family, address and
/// port; in version 3 a TURN server count (1 byte, 0-4) and per server its transport (0 UDP, 1 TCP), family,
/// address, port, username and password (each a 1-byte length, at most 128 UTF-8 bytes); then the first 4 bytes of
/// BLAKE2b-256 over everything before. Version 3 is written when a member has several addresses or TURN servers are
/// shared; a ticket is at most ``maxTicketLength`` characters.
///
/// Treat a ticket like a password until it expires: whoever holds it can join, and use the TURN credentials it
/// carries.
public struct Invitation: Sendable, CustomStringConvertible {
    /// The text prefix of every ticket.
    public static let prefix = "huddle:"
    /// The ticket format version this build writes when the ticket names TURN servers or a member at several
    /// addresses; otherwise it writes version 2 when it names relays and 1 when not, so older builds still read it.
    /// All three are read.
    public static let version: UInt8 = 3
    /// The longest TURN username or password a ticket carries, in UTF-8 bytes.
    public static let maxTurnCredentialBytes = 128
    /// The most addresses a ticket names for one member (its first ones, best first).
    public static let maxAddressesPerMember = 4
    /// The longest ticket text: 8 members with 4 IPv6 addresses each, 4 IPv6 relays, 4 TURN servers with the
    /// longest credentials and a 64-byte name. A member with a LAN and a public IPv4 address makes a ticket of about
    /// 160 characters.
    public static let maxTicketLength = 2_969
    /// The most members a ticket names.
    public static let maxMembers = 8
    static let checksumLength = 4

    /// A member a joiner can reach.
    public struct Member: Sendable, Hashable {
        /// Its Noise static key.
        public var staticKey: X25519PublicKey
        /// Where it listens, best first (1 to ``Invitation/maxAddressesPerMember``): a joiner dials the first at once
        /// and the others a quarter second later, and stays on whichever answers.
        public var addresses: [NetworkAddress]

        /// Where it listens first.
        public var address: NetworkAddress { addresses[0] }

        /// A member at `addresses` (the first ``Invitation/maxAddressesPerMember`` are kept; at least one).
        init(staticKey: X25519PublicKey, addresses: [NetworkAddress]) {
            precondition(!addresses.isEmpty, "a ticket names a member at one address at least")
            self.staticKey = staticKey
            self.addresses = Array(addresses.prefix(Invitation.maxAddressesPerMember))
        }

        /// A member at one address.
        init(staticKey: X25519PublicKey, address: NetworkAddress) {
            self.init(staticKey: staticKey, addresses: [address])
        }
    }

    /// The session the ticket is for.
    public let session: SessionID
    /// The invitation secret.
    let secret: SecureBytes
    /// When the ticket stops being accepted.
    public let expiresAt: Date
    /// The inviting member's identity key.
    public let inviterSigningKey: Ed25519PublicKey
    /// The inviting member's display name.
    public let inviterName: String
    /// Members a joiner can reach, the inviter first.
    public let members: [Member]
    /// Relays the session's members use, at most ``HuddleNode/maxRelays``: a joiner registers with them, so it
    /// reaches members behind NATs.
    public let relays: [NetworkAddress]
    /// TURN servers, with their credentials, that the inviting node shares (``HuddleNode/Configuration/shareTurnServers``),
    /// at most ``HuddleNode/maxTurnServers``: a joiner allocates on them too, so it gets in from a network that
    /// blocks UDP or from behind a symmetric NAT without a TURN server of its own.
    public let turnServers: [TurnServer]

    init(
        session: SessionID, secret: SecureBytes, expiresAt: Date, inviterSigningKey: Ed25519PublicKey,
        inviterName: String, members: [Member], relays: [NetworkAddress] = [], turnServers: [TurnServer] = []
    ) {
        self.session = session
        self.secret = secret
        self.expiresAt = expiresAt
        self.inviterSigningKey = inviterSigningKey
        self.inviterName = String(
            decoding: Array(inviterName.utf8.prefix(ProtocolLimits.maxMemberNameBytes)), as: UTF8.self)
        self.members = Array(members.prefix(Self.maxMembers))
        self.relays = Array(relays.prefix(ProtocolLimits.maxRelays))
        // A node sharing longer credentials is refused at start (``HuddleError/turnCredentialsTooLong(server:limit:)``);
        // this only keeps a ticket built otherwise writable.
        self.turnServers = Array(
            turnServers.filter {
                $0.credentials.username.utf8.count <= Self.maxTurnCredentialBytes
                    && $0.credentials.password.utf8.count <= Self.maxTurnCredentialBytes
            }
            .prefix(ProtocolLimits.maxTurnServers))
    }

    /// The inviter's fingerprint, to compare out of band.
    public var inviterFingerprint: String {
        PublicIdentity(signingKey: inviterSigningKey, agreementKey: members[0].staticKey, binding: []).fingerprint
    }

    /// Whether the ticket has expired at `date`.
    public func isExpired(at date: Date = Date()) -> Bool { date >= expiresAt }

    /// The ticket text.
    public var ticket: String {
        let version: UInt8 =
            !turnServers.isEmpty || members.contains { $0.addresses.count > 1 } ? 3 : relays.isEmpty ? 1 : 2
        var payload: [UInt8] = [version]
        payload += session.bytes
        payload += secret.copyToArray()
        let expiry = UInt64(max(0, expiresAt.timeIntervalSince1970.rounded(.down)))
        for shift in stride(from: 0, to: 64, by: 8) {
            payload.append(UInt8(truncatingIfNeeded: expiry >> UInt64(shift)))
        }
        payload += inviterSigningKey.bytes
        let name = Array(inviterName.utf8)
        payload.append(UInt8(name.count))
        payload += name
        payload.append(UInt8(members.count))
        for member in members {
            payload += member.staticKey.bytes
            if version == 3 { payload.append(UInt8(member.addresses.count)) }
            for address in version == 3 ? member.addresses : [member.address] { Self.append(address, to: &payload) }
        }
        if version >= 2 {
            payload.append(UInt8(relays.count))
            for relay in relays { Self.append(relay, to: &payload) }
        }
        if version == 3 {
            payload.append(UInt8(turnServers.count))
            for server in turnServers {
                payload.append(server.transport == .udp ? 0 : 1)
                Self.append(server.address, to: &payload)
                for text in [server.credentials.username, server.credentials.password] {
                    payload.append(UInt8(text.utf8.count))
                    payload += Array(text.utf8)
                }
            }
        }
        payload += BLAKE2b.hash(payload, outputLength: 32).prefix(Self.checksumLength)
        return Self.prefix + Self.base64URL(payload)
    }

    public var description: String { ticket }

    /// Appends `address` as a ticket writes it: family (4 or 6), address bytes, port little-endian.
    private static func append(_ address: NetworkAddress, to payload: inout [UInt8]) {
        payload.append(address.family == .ipv4 ? 4 : 6)
        payload += address.addressBytes
        payload.append(UInt8(truncatingIfNeeded: address.port))
        payload.append(UInt8(truncatingIfNeeded: address.port >> 8))
    }

    /// Parses a ticket. Checks its format and checksum only: no network I/O, and expiry is checked when joining.
    ///
    /// - Throws: ``InvitationError`` saying what is wrong with the text.
    public init(parsing text: String) throws(InvitationError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(Self.prefix) else { throw .notATicket }
        let payload = try Self.decodeBase64URL(String(trimmed.dropFirst(Self.prefix.count)))
        guard payload.count > Self.checksumLength + 1 else { throw .truncated }
        let body = payload.dropLast(Self.checksumLength)
        guard
            BLAKE2b.hash(body, outputLength: 32).prefix(Self.checksumLength).elementsEqual(
                payload.suffix(Self.checksumLength))
        else { throw .checksumMismatch }
        var reader = TicketReader(bytes: Array(body))
        let version = try reader.byte()
        guard (1...Self.version).contains(version) else { throw .unsupportedVersion(version) }
        session = SessionID(bytes: try reader.bytes(SessionID.length))!
        secret = SecureBytes(try reader.bytes(32))
        var expiry: UInt64 = 0
        for (index, byte) in try reader.bytes(8).enumerated() { expiry |= UInt64(byte) << (8 * UInt64(index)) }
        expiresAt = Date(timeIntervalSince1970: TimeInterval(min(expiry, UInt64(Int64.max / 2))))
        guard let signingKey = try? Ed25519PublicKey(bytes: try reader.bytes(32)) else { throw .truncated }
        inviterSigningKey = signingKey
        let nameLength = Int(try reader.byte())
        guard nameLength <= ProtocolLimits.maxMemberNameBytes,
            let name = String(validating: try reader.bytes(nameLength), as: UTF8.self)
        else { throw .invalidName }
        inviterName = name
        let count = Int(try reader.byte())
        guard count >= 1 else { throw .noMembers }
        guard count <= Self.maxMembers else { throw .tooManyMembers(count) }
        var members: [Member] = []
        for _ in 0..<count {
            guard let key = try? X25519PublicKey(bytes: try reader.bytes(32)) else { throw .truncated }
            let addressCount = version == 3 ? Int(try reader.byte()) : 1
            guard (1...Self.maxAddressesPerMember).contains(addressCount) else { throw .invalidAddress }
            var addresses: [NetworkAddress] = []
            for _ in 0..<addressCount { addresses.append(try reader.address()) }
            members.append(Member(staticKey: key, addresses: addresses))
        }
        var relays: [NetworkAddress] = []
        if version >= 2 {
            let relayCount = Int(try reader.byte())
            // Version 3 may name TURN servers without relays.
            guard relayCount >= (version == 2 ? 1 : 0), relayCount <= ProtocolLimits.maxRelays else {
                throw .invalidAddress
            }
            for _ in 0..<relayCount { relays.append(try reader.address()) }
        }
        var turnServers: [TurnServer] = []
        if version >= 3 {
            let count = Int(try reader.byte())
            guard count <= ProtocolLimits.maxTurnServers else { throw .invalidTurnServer }
            for _ in 0..<count {
                let transport: TurnTransport
                switch try reader.byte() {
                case 0: transport = .udp
                case 1: transport = .tcp
                default: throw .invalidTurnServer
                }
                let address = try reader.address()
                var texts: [String] = []
                for _ in 0..<2 {
                    let length = Int(try reader.byte())
                    guard length <= Self.maxTurnCredentialBytes,
                        let text = String(validating: try reader.bytes(length), as: UTF8.self)
                    else { throw .invalidTurnServer }
                    texts.append(text)
                }
                turnServers.append(
                    TurnServer(
                        address: address, transport: transport,
                        credentials: TurnCredentials(username: texts[0], password: texts[1])))
            }
        }
        guard reader.isAtEnd else { throw .trailingBytes }
        self.members = members
        self.relays = relays
        self.turnServers = turnServers
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes unpadded base64url. A length of 1 modulo 4 is never valid base64 (one character carries only 6 bits):
    /// with a valid alphabet it means characters were lost, so it is ``InvitationError/truncated``, not a bad
    /// character.
    static func decodeBase64URL(_ text: String) throws(InvitationError) -> [UInt8] {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw .badEncoding
        }
        guard text.count % 4 != 1 else { throw .truncated }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { throw .badEncoding }
        return Array(data)
    }
}

/// Reads a ticket's fields, throwing ``InvitationError/truncated`` instead of reading past the end.
struct TicketReader {
    let bytes: [UInt8]
    var offset = 0

    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() throws(InvitationError) -> UInt8 { try self.bytes(1)[0] }

    mutating func bytes(_ count: Int) throws(InvitationError) -> [UInt8] {
        guard count <= bytes.count - offset else { throw .truncated }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// An address: family (4 or 6), address bytes, port little-endian (not 0).
    mutating func address() throws(InvitationError) -> NetworkAddress {
        let address: NetworkAddress?
        switch try byte() {
        case 4:
            let bytes = try bytes(4)
            address = NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: try port())
        case 6:
            address = NetworkAddress(ipv6: try bytes(16), port: try port())
        default:
            throw .invalidAddress
        }
        guard let address, address.port != 0 else { throw .invalidAddress }
        return address
    }

    mutating func port() throws(InvitationError) -> UInt16 {
        let pair = try bytes(2)
        return UInt16(pair[0]) | UInt16(pair[1]) << 8
    }
}
