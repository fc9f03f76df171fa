/// Why a ticket was refused. Each case's description says what to do about it.
public enum InvitationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The text does not start with `huddle:`.
    case notATicket
    /// The text after `huddle:` is not base64url.
    case badEncoding
    /// The ticket ends early (characters were lost when it was copied).
    case truncated
    /// The checksum does not match: a character was changed, added or lost.
    case checksumMismatch
    /// The ticket was written by a newer (or unknown) version of Huddle.
    case unsupportedVersion(UInt8)
    /// The inviter's name is too long or not UTF-8.
    case invalidName
    /// The ticket names no member to contact.
    case noMembers
    /// The ticket names more members than allowed.
    case tooManyMembers(Int)
    /// A member address has an unknown family or port 0.
    case invalidAddress
    /// Bytes follow the last field.
    case trailingBytes
    /// A TURN server entry (version 3) has an unknown transport, a count above 4, or a username or password
    /// longer than ``Invitation/maxTurnCredentialBytes`` or not UTF-8.
    case invalidTurnServer

    public var description: String {
        switch self {
        case .notATicket: "this is not a Huddle ticket (tickets start with \"huddle:\")"
        case .badEncoding: "the ticket contains characters that cannot appear in a ticket; copy it again"
        case .truncated: "the ticket is truncated or damaged (it ends early); copy all of it"
        case .checksumMismatch: "the ticket is damaged (checksum mismatch); copy it again"
        case .unsupportedVersion(let version):
            "the ticket has format version \(version), which this version of Huddle does not read; update Huddle"
        case .invalidName: "the ticket's inviter name is invalid"
        case .noMembers: "the ticket names no member to contact"
        case .tooManyMembers(let count):
            "the ticket names \(count) members; at most \(Invitation.maxMembers) are allowed"
        case .invalidAddress: "the ticket contains an invalid member address"
        case .trailingBytes: "the ticket has extra data at its end; copy it again"
        case .invalidTurnServer: "the ticket contains an invalid TURN server"
        }
    }
}
