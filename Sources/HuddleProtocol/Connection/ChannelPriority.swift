import HuddleWire

/// Scheduling classes of channels, by channel number: control (0-15) before messages (16-127) before bulk
/// (128-255). Bulk is never starved: it gets at least one packet in every ``bulkShare``.
public enum ChannelPriority: Int, Sendable, Comparable {
    /// Membership and session control.
    case control = 0
    /// Application messages.
    case messages = 1
    /// Bulk transfers (journal chunks).
    case bulk = 2

    /// Bulk data goes into at least one of this many consecutive data packets when it has something to send.
    public static let bulkShare = 8

    /// The class of `channel`.
    public init(channel: ChannelID) {
        switch channel.rawValue {
        case 0..<16: self = .control
        case 16..<128: self = .messages
        default: self = .bulk
        }
    }

    public static func < (lhs: ChannelPriority, rhs: ChannelPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}
