import Foundation

/// One `--json` event line of `huddle`: its `event` name and its other fields, numbers and booleans (`true`, `false`) rendered as text.
public struct Event: Sendable, CustomStringConvertible {
    /// The `event` field (`ticket`, `joined`, `message`, ...).
    public let name: String
    /// Every other field.
    public let fields: [String: String]

    /// Parses one line; `nil` unless it is a JSON object with a string `event`.
    public init?(parsing line: String) {
        guard let data = line.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let name = object["event"] as? String
        else { return nil }
        self.name = name
        var fields: [String: String] = [:]
        for (key, value) in object where key != "event" {
            if let number = value as? NSNumber, String(cString: number.objCType) == "c" {
                // JSON true and false (Foundation hands them over as NSNumber, which would print 1 and 0).
                fields[key] = number.boolValue ? "true" : "false"
            } else {
                fields[key] = value as? String ?? "\(value)"
            }
        }
        self.fields = fields
    }

    /// The field `key`, if present.
    public subscript(key: String) -> String? { fields[key] }

    public var description: String { "\(name) \(fields)" }
}
