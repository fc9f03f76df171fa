import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

@Suite("Invitation tickets")
struct InvitationTests {
    static func invitation(
        members: Int = 2, name: String = "ada", relays: [NetworkAddress] = [], turnServers: [TurnServer] = []
    ) -> Invitation {
        var random = ChaChaRandomGenerator(seed: 5)
        let identity = Identity(using: &random)
        let others = (0..<members).map { index in
            Invitation.Member(
                staticKey: Identity(using: &random).agreementKey.publicKey,
                address: index % 2 == 0
                    ? NetworkAddress(ipv4: 127, 0, 0, 1, port: UInt16(4000 + index))
                    : NetworkAddress(ipv6: [UInt8](repeating: 0, count: 15) + [1], port: 4001)!)
        }
        return Invitation(
            session: SessionID(bytes: [UInt8](0..<16))!, secret: SecureBytes(count: 32, using: &random),
            expiresAt: Date(timeIntervalSince1970: 1_900_000_000),
            inviterSigningKey: identity.publicIdentity.signingKey,
            inviterName: name, members: others, relays: relays, turnServers: turnServers)
    }

    static let turnServers = [
        TurnServer(
            address: NetworkAddress(ipv4: 198, 51, 100, 4, port: 3478),
            credentials: TurnCredentials(username: "1900000000:ada", password: "c2VjcmV0IGtleQ==")),
        TurnServer(
            address: NetworkAddress(ipv6: [0x20, 0x01] + [UInt8](repeating: 0, count: 13) + [9], port: 443)!,
            transport: .tcp, credentials: TurnCredentials(username: "ada", password: "pässwörd")),
    ]

    @Test("A ticket naming relays is version 2 and round-trips them; one without relays stays version 1")
    func relays() throws {
        let relays = [
            NetworkAddress(ipv4: 198, 51, 100, 4, port: 3478),
            NetworkAddress(ipv6: [0x20, 0x01] + [UInt8](repeating: 0, count: 13) + [9], port: 3479)!,
        ]
        let original = Self.invitation(members: 2, relays: relays)
        let parsed = try Invitation(parsing: original.ticket)
        #expect(parsed.relays == relays)
        #expect(parsed.members == original.members)
        #expect(try Invitation.decodeBase64URL(String(original.ticket.dropFirst(7)))[0] == 2)
        #expect(try Invitation.decodeBase64URL(String(Self.invitation().ticket.dropFirst(7)))[0] == 1)
        #expect(try Invitation(parsing: Self.invitation().ticket).relays.isEmpty)
        // At most four relays are kept.
        let many = Self.invitation(relays: (1...6).map { NetworkAddress(ipv4: 10, 0, 0, UInt8($0), port: 3478) })
        #expect(try Invitation(parsing: many.ticket).relays.count == 4)
    }

    @Test("A ticket sharing TURN servers is version 3 and round-trips them, with or without relays")
    func turnServers() throws {
        for relays in [[], [NetworkAddress(ipv4: 198, 51, 100, 5, port: 3478)]] {
            let original = Self.invitation(relays: relays, turnServers: Self.turnServers)
            let parsed = try Invitation(parsing: original.ticket)
            #expect(parsed.turnServers == Self.turnServers)
            #expect(parsed.relays == relays)
            #expect(parsed.ticket == original.ticket)
            #expect(try Invitation.decodeBase64URL(String(original.ticket.dropFirst(7)))[0] == 3)
        }
        // Credentials longer than a ticket carries are left out; at most four servers are kept.
        let long = TurnServer(
            address: NetworkAddress(ipv4: 10, 0, 0, 1, port: 3478),
            credentials: TurnCredentials(username: String(repeating: "u", count: 129), password: "p"))
        #expect(Self.invitation(turnServers: [long]).turnServers.isEmpty)
        #expect(Self.invitation(turnServers: Array(repeating: Self.turnServers[0], count: 6)).turnServers.count == 4)
    }

    @Test("A damaged TURN entry (transport, count, credential length) is invalidTurnServer")
    func damagedTurnServer() throws {
        let base = Self.invitation(members: 1, turnServers: [Self.turnServers[0]])
        func ticket(_ mutate: (inout [UInt8]) -> Void) -> String {
            var payload = try! Invitation.decodeBase64URL(String(base.ticket.dropFirst(7)))
            payload.removeLast(Invitation.checksumLength)
            mutate(&payload)
            payload += BLAKE2b.hash(payload, outputLength: 32).prefix(Invitation.checksumLength)
            return Invitation.prefix + Invitation.base64URL(payload)
        }
        // The TURN list follows the member (1 + 16 + 32 + 8 + 32 + 1 + 3 + 1 + 32, an address count of 1, and
        // 1 + 4 + 2 bytes of address) and an empty relay list (1).
        let count = 1 + 16 + 32 + 8 + 32 + 1 + 3 + 1 + 32 + 1 + 1 + 4 + 2 + 1
        #expect(try Invitation(parsing: ticket { _ in }).turnServers == [Self.turnServers[0]])
        #expect(throws: InvitationError.invalidTurnServer) { try Invitation(parsing: ticket { $0[count] = 5 }) }
        // An address count of 0 or 5 for the member.
        let addressCount = 1 + 16 + 32 + 8 + 32 + 1 + 3 + 1 + 32
        #expect(throws: InvitationError.invalidAddress) { try Invitation(parsing: ticket { $0[addressCount] = 0 }) }
        #expect(throws: InvitationError.invalidAddress) { try Invitation(parsing: ticket { $0[addressCount] = 5 }) }
        #expect(throws: InvitationError.invalidTurnServer) { try Invitation(parsing: ticket { $0[count + 1] = 2 }) }
        // The username's length byte follows the count, transport, family, address and port.
        #expect(throws: InvitationError.invalidTurnServer) {
            try Invitation(parsing: ticket { $0[count + 1 + 1 + 1 + 4 + 2] = 129 })
        }
        // Version 2 still needs at least one relay; version 3 may have none.
        #expect(throws: InvitationError.invalidAddress) {
            try Invitation(parsing: ticket { $0[0] = 2 })
        }
    }

    @Test("A member at several addresses makes a version 3 ticket naming up to four of them, best first")
    func memberAddresses() throws {
        var random = ChaChaRandomGenerator(seed: 6)
        let addresses = [
            NetworkAddress(ipv4: 192, 168, 1, 20, port: 7000), NetworkAddress(ipv4: 198, 51, 100, 9, port: 7000),
            NetworkAddress(ipv6: [0x20, 0x01] + [UInt8](repeating: 0, count: 13) + [5], port: 7000)!,
            NetworkAddress(ipv4: 10, 0, 0, 1, port: 7000), NetworkAddress(ipv4: 10, 0, 0, 2, port: 7000),
        ]
        let member = Invitation.Member(
            staticKey: Identity(using: &random).agreementKey.publicKey, addresses: addresses)
        #expect(member.addresses == Array(addresses.prefix(4)))
        let original = Invitation(
            session: SessionID(bytes: [UInt8](0..<16))!, secret: SecureBytes(count: 32, using: &random),
            expiresAt: Date(timeIntervalSince1970: 1_900_000_000),
            inviterSigningKey: Identity(using: &random).publicIdentity.signingKey, inviterName: "ada",
            members: [member])
        let parsed = try Invitation(parsing: original.ticket)
        #expect(parsed.members == [member])
        #expect(parsed.members[0].address == addresses[0])
        #expect(try Invitation.decodeBase64URL(String(original.ticket.dropFirst(7)))[0] == 3)
    }

    @Test(
        "The largest ticket (8 members at 4 IPv6 addresses, 4 relays, 4 TURN servers, longest texts) is maxTicketLength"
    )
    func largestTicket() throws {
        var random = ChaChaRandomGenerator(seed: 7)
        let ipv6 = { (last: UInt8) in
            NetworkAddress(ipv6: [0x20, 0x01] + [UInt8](repeating: 0, count: 13) + [last], port: 7000)!
        }
        let members = (0..<8).map { index in
            Invitation.Member(
                staticKey: Identity(using: &random).agreementKey.publicKey,
                addresses: (0..<4).map { ipv6(UInt8(index * 4 + $0)) })
        }
        let long = String(repeating: "x", count: Invitation.maxTurnCredentialBytes)
        let largest = Invitation(
            session: SessionID(bytes: [UInt8](0..<16))!, secret: SecureBytes(count: 32, using: &random),
            expiresAt: Date(timeIntervalSince1970: 1_900_000_000),
            inviterSigningKey: Identity(using: &random).publicIdentity.signingKey,
            inviterName: String(repeating: "n", count: 64), members: members, relays: (0..<4).map { ipv6(100 + $0) },
            turnServers: (0..<4).map {
                TurnServer(address: ipv6(200 + $0), credentials: TurnCredentials(username: long, password: long))
            })
        #expect(largest.ticket.count == Invitation.maxTicketLength)
        #expect(try Invitation(parsing: largest.ticket).members == members)
    }

    @Test("A ticket round-trips every field and keeps its text form")
    func roundTrip() throws {
        let original = Self.invitation(members: 8)
        let parsed = try Invitation(parsing: original.ticket)
        #expect(parsed.ticket == original.ticket)
        #expect(parsed.session == original.session)
        #expect(parsed.members == original.members)
        #expect(parsed.inviterName == "ada")
        #expect(parsed.expiresAt == original.expiresAt)
        #expect(parsed.secret.constantTimeEquals(original.secret))
        #expect(original.ticket.hasPrefix("huddle:"))
        #expect(try Invitation(parsing: "  \(original.ticket)\n").ticket == original.ticket)
    }

    @Test("Every kind of damage gets its own typed error")
    func damage() throws {
        let ticket = Self.invitation().ticket
        #expect(throws: InvitationError.notATicket) { try Invitation(parsing: "hello") }
        #expect(throws: InvitationError.badEncoding) { try Invitation(parsing: ticket + "!") }
        #expect(throws: InvitationError.truncated) { try Invitation(parsing: "huddle:AAAA") }
        // Change one character in the middle: the checksum catches it.
        var characters = Array(ticket)
        let index = characters.count / 2
        characters[index] = characters[index] == "A" ? "B" : "A"
        #expect(throws: InvitationError.checksumMismatch) { try Invitation(parsing: String(characters)) }
        #expect(throws: InvitationError.checksumMismatch) { try Invitation(parsing: String(ticket.dropLast(3))) }
    }

    @Test("A ticket cut to a length of 1 mod 4 reads as truncated, not as bad characters; its message says so")
    func cutToOneModFour() throws {
        let encoded = String(Self.invitation().ticket.dropFirst(Invitation.prefix.count))
        // Every cut whose remaining length is 1 mod 4 (base64 can never end there).
        for length in stride(from: 1, to: encoded.count, by: 1) where length % 4 == 1 {
            let cut = Invitation.prefix + encoded.prefix(length)
            #expect(throws: InvitationError.truncated, "cut to \(length)") { try Invitation(parsing: cut) }
        }
        let message = InvitationError.truncated.description
        #expect(message.contains("truncated") && !message.contains("characters"), "\(message)")
        // A character outside the alphabet is still reported as such, at any length.
        #expect(throws: InvitationError.badEncoding) { try Invitation(parsing: "huddle:" + encoded.prefix(4) + "*") }
    }

    @Test("Structural errors behind a valid checksum: version, member count, address family, trailing bytes")
    func structure() throws {
        func ticket(_ mutate: (inout [UInt8]) -> Void) -> String {
            var payload = try! Invitation.decodeBase64URL(String(Self.invitation(members: 1).ticket.dropFirst(7)))
            payload.removeLast(Invitation.checksumLength)
            mutate(&payload)
            payload += BLAKE2b.hash(payload, outputLength: 32).prefix(Invitation.checksumLength)
            return Invitation.prefix + Invitation.base64URL(payload)
        }
        #expect(throws: InvitationError.unsupportedVersion(4)) { try Invitation(parsing: ticket { $0[0] = 4 }) }
        // Version 2 must carry a relay list (version 1 never does).
        #expect(throws: InvitationError.truncated) { try Invitation(parsing: ticket { $0[0] = 2 }) }
        let countOffset = 1 + 16 + 32 + 8 + 32 + 1 + 3
        #expect(throws: InvitationError.noMembers) { try Invitation(parsing: ticket { $0[countOffset] = 0 }) }
        #expect(throws: InvitationError.tooManyMembers(9)) { try Invitation(parsing: ticket { $0[countOffset] = 9 }) }
        #expect(throws: InvitationError.invalidAddress) { try Invitation(parsing: ticket { $0[countOffset + 33] = 5 }) }
        #expect(throws: InvitationError.trailingBytes) { try Invitation(parsing: ticket { $0.append(0) }) }
        #expect(throws: InvitationError.truncated) { try Invitation(parsing: ticket { $0.removeLast(3) }) }
    }

    @Test("Expiry is a property of the ticket, checked when joining")
    func expiry() {
        let invitation = Self.invitation()
        #expect(!invitation.isExpired(at: Date(timeIntervalSince1970: 1_899_999_999)))
        #expect(invitation.isExpired(at: Date(timeIntervalSince1970: 1_900_000_000)))
    }
}
