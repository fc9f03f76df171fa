/// Why a connection was closed, as carried by a CLOSE frame (a variable-length integer).
///
/// Named codes are listed as static members; any other value up to 2^62 - 1 is preserved as is, so codes
/// added by later versions round-trip through older peers.
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code number.
    public var rawValue: UInt64

    /// Wraps a code number.
    @inlinable
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// 0: closed normally, no error.
    public static let noError = CloseCode(rawValue: 0)
    /// 1: the peer violated the protocol (malformed or forbidden frame).
    public static let protocolViolation = CloseCode(rawValue: 1)
    /// 2: the sender hit an internal error.
    public static let internalError = CloseCode(rawValue: 2)
    /// 3: nothing was received for the idle timeout.
    public static let idleTimeout = CloseCode(rawValue: 3)
    /// 4: the handshake did not complete in time.
    public static let handshakeTimeout = CloseCode(rawValue: 4)
    /// 5: the session was ended for everyone.
    public static let sessionEnded = CloseCode(rawValue: 5)
    /// 6: the sender left the session.
    public static let left = CloseCode(rawValue: 6)
    /// 7: the peer sent more than its flow-control credit allowed.
    public static let flowControlError = CloseCode(rawValue: 7)
    /// 8: the peer sent something larger than a limit allows.
    public static let tooLarge = CloseCode(rawValue: 8)

    /// The code's name (for example `protocolViolation`), or `unknown(<n>)`.
    public var description: String {
        switch rawValue {
        case 0: return "noError"
        case 1: return "protocolViolation"
        case 2: return "internalError"
        case 3: return "idleTimeout"
        case 4: return "handshakeTimeout"
        case 5: return "sessionEnded"
        case 6: return "left"
        case 7: return "flowControlError"
        case 8: return "tooLarge"
        default: return "unknown(\(rawValue))"
        }
    }
}
