/// A STUN method (RFC 8489 18.2, RFC 8656 17): the 12 bits of a message type that say what is asked.
public struct StunMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method number, 0 to 0xFFF.
    public let rawValue: UInt16

    /// A method by number (the top 4 bits are dropped: a method has 12).
    public init(rawValue: UInt16) {
        self.rawValue = rawValue & 0x0FFF
    }

    /// Binding (0x001): asks for the address the request came from (a reflexive address).
    public static let binding = StunMethod(rawValue: 0x001)
    /// Allocate (0x003): asks a TURN server for a relayed address.
    public static let allocate = StunMethod(rawValue: 0x003)
    /// Refresh (0x004): extends (or, with lifetime 0, deletes) an allocation.
    public static let refresh = StunMethod(rawValue: 0x004)
    /// Send (0x006): an indication carrying data to a peer through the allocation.
    public static let send = StunMethod(rawValue: 0x006)
    /// Data (0x007): an indication carrying data from a peer through the allocation.
    public static let data = StunMethod(rawValue: 0x007)
    /// CreatePermission (0x008): lets a peer's IP address send to the allocation.
    public static let createPermission = StunMethod(rawValue: 0x008)
    /// ChannelBind (0x009): binds a channel number to a peer's address, for the 4-byte ChannelData framing.
    public static let channelBind = StunMethod(rawValue: 0x009)

    public var description: String {
        switch self {
        case .binding: return "Binding"
        case .allocate: return "Allocate"
        case .refresh: return "Refresh"
        case .send: return "Send"
        case .data: return "Data"
        case .createPermission: return "CreatePermission"
        case .channelBind: return "ChannelBind"
        default: return "method 0x\(String(rawValue, radix: 16))"
        }
    }
}
