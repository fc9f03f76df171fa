import HuddleProtocol

/// An attachment's identifier: 16 bytes chosen by its author (random, so two authors never collide).
public struct AttachmentID: Hashable, Sendable, CustomStringConvertible {
    /// The length: 16 bytes.
    public static let length = 16
    /// The bytes.
    public let bytes: [UInt8]

    /// An identifier from exactly 16 bytes; `nil` for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = Array(bytes)
    }

    public var description: String {
        bytes.prefix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
