import HuddleProtocol

/// A session's public identifier: 16 random bytes, chosen by the member who starts it. It names the session in
/// tickets and membership messages; it is not a secret.
public struct SessionID: Hashable, Sendable, CustomStringConvertible {
    /// Its length in bytes.
    public static let length = 16

    /// The 16 bytes.
    public let bytes: [UInt8]

    /// A session identifier from exactly 16 bytes, or `nil`.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = Array(bytes)
    }

    /// Lower-case hex, 32 digits.
    public var description: String { bytes.hexString }
}

extension Sequence<UInt8> {
    /// Lower-case hex of the bytes.
    var hexString: String {
        var text = ""
        for byte in self {
            text += byte < 0x10 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }
        return text
    }
}
