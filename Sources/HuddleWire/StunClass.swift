/// The class of a STUN message (RFC 8489 5): the two bits of its type that say whether it asks, tells or answers.
public enum StunClass: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// A request, answered by a success or an error response with the same transaction ID.
    case request = 0
    /// An indication, never answered.
    case indication = 1
    /// A success response.
    case success = 2
    /// An error response (with an ERROR-CODE attribute).
    case error = 3

    public var description: String {
        switch self {
        case .request: return "request"
        case .indication: return "indication"
        case .success: return "success response"
        case .error: return "error response"
        }
    }
}
