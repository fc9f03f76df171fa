/// A 32-bit session index chosen by the receiver of a packet (WireGuard's "sender/receiver index").
///
/// Each side picks an index for itself in its handshake message; the peer then puts that index in the
/// receiver-index field of every packet it sends, so the receiver finds the session in one lookup.
/// Indices are opaque identifiers: they have no order on the wire and are sent little-endian.
public struct ReceiverIndex: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The index as an unsigned integer.
    public var rawValue: UInt32

    /// Wraps a raw index.
    @inlinable
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Wraps a raw index.
    @inlinable
    public init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// The index as eight hexadecimal digits.
    public var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
