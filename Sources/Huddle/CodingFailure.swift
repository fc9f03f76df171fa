/// A value that could not be encoded or decoded: the payload of ``HuddleError/coding(_:)``.
public struct CodingFailure: Sendable, Hashable, CustomStringConvertible {
    /// Which way the value was going.
    public enum Direction: Sendable, Hashable {
        /// A value of the app's was being encoded to be sent or stored.
        case encoding
        /// Bytes were being decoded into a value of the app's.
        case decoding
    }

    /// Which way the value was going.
    public let direction: Direction
    /// The Swift type involved, as `String(describing:)` names it.
    public let typeName: String
    /// What the coder said (Foundation's description of its `EncodingError` or `DecodingError`).
    public let detail: String

    /// A failure to encode or decode `type`, with the coder's `error`.
    init(_ direction: Direction, _ type: Any.Type, _ error: any Error) {
        self.direction = direction
        self.typeName = String(describing: type)
        self.detail = "\(error)"
    }

    public var description: String {
        switch direction {
        case .encoding: "\(typeName) does not encode: \(detail)"
        case .decoding: "the bytes are not a \(typeName): \(detail)"
        }
    }
}
