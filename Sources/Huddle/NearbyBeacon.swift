/// One local-network announcement of a session (docs/PROTOCOL.md §11): the name the announcing member chose and a
/// ticket for the session, multicast to ``group``:``port``.
///
/// Layout: magic `HLAN` (4 bytes), version (1 byte, 1), name length (1 byte, at most ``maxNameBytes``) and the name
/// in UTF-8, ticket length (2 bytes, big-endian, at most ``maxTicketBytes``) and the ticket text (`huddle:...`, as
/// ``Invitation/ticket`` writes it). Anything else (a wrong magic or version, lengths past the end, bytes after the
/// ticket, a ticket that does not parse) is not a beacon and is ignored.
struct NearbyBeacon: Sendable, Equatable {
    /// The IPv4 multicast group beacons go to: in the organisation-local scope (RFC 2365), so routers do not forward
    /// it, and beacons are sent with TTL 1 anyway.
    static let group = "239.255.72.68"
    /// The UDP port beacons go to.
    static let port = 7787
    static let magic: [UInt8] = Array("HLAN".utf8)
    static let version: UInt8 = 1
    /// The longest name, in UTF-8 bytes.
    static let maxNameBytes = 64
    /// The longest ticket text: a ticket naming 8 IPv6 members and 4 relays is about 700 characters.
    static let maxTicketBytes = 1024

    /// The name the announcing member chose for the session (shown by `huddle discover`).
    var name: String
    /// The ticket text.
    var ticket: String

    /// The beacon's bytes; the name is cut to ``maxNameBytes`` at a character boundary.
    func encoded() -> [UInt8] {
        var nameBytes = Array(name.utf8)
        if nameBytes.count > Self.maxNameBytes {
            var cut = Substring(name)
            while cut.utf8.count > Self.maxNameBytes { cut = cut.dropLast() }
            nameBytes = Array(cut.utf8)
        }
        let ticketBytes = Array(ticket.utf8.prefix(Self.maxTicketBytes))
        var bytes = Self.magic + [Self.version, UInt8(nameBytes.count)] + nameBytes
        bytes += [UInt8(ticketBytes.count >> 8), UInt8(ticketBytes.count & 0xff)] + ticketBytes
        return bytes
    }

    /// Decodes `bytes`; `nil` unless they are exactly one well-formed beacon.
    init?(decoding bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count >= 8, Array(bytes[0..<4]) == Self.magic, bytes[4] == Self.version else { return nil }
        let nameLength = Int(bytes[5])
        guard nameLength <= Self.maxNameBytes, bytes.count >= 6 + nameLength + 2 else { return nil }
        let nameEnd = 6 + nameLength
        let ticketLength = Int(bytes[nameEnd]) << 8 | Int(bytes[nameEnd + 1])
        guard ticketLength <= Self.maxTicketBytes, bytes.count == nameEnd + 2 + ticketLength,
            let name = String(validating: bytes[6..<nameEnd], as: UTF8.self),
            let ticket = String(validating: bytes[(nameEnd + 2)...], as: UTF8.self)
        else { return nil }
        self.name = name
        self.ticket = ticket
    }

    /// A beacon for `name` and `ticket`.
    init(name: String, ticket: String) {
        self.name = name
        self.ticket = ticket
    }
}
