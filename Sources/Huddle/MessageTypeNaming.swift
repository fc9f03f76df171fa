/// Gives a message type a stable name on the wire. Without it a ``Messenger`` names a type by its fully qualified
/// Swift name (`MyApp.Stroke`), which changes when the type or module is renamed; with it, old and new versions of an
/// app that agree on the name exchange messages: a receiver decodes what it understands (JSON ignores fields it does
/// not know) and skips messages it cannot decode.
public protocol MessageTypeNaming {
    /// The name, for example `com.example.draw.stroke`.
    static var messageTypeName: String { get }
}

enum MessageTypeName {
    static func of<Message>(_ type: Message.Type) -> String {
        (type as? any MessageTypeNaming.Type)?.messageTypeName ?? String(reflecting: type)
    }
}
