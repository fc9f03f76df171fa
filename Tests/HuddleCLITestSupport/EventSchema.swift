import Foundation

/// docs/cli-events.schema.json, the JSON Schema of `huddle --json` events, as the tests check output against it: for
/// each event, its fields, the JSON types each may take and, for a field with an `enum`, the strings it may be. The
/// file is a `oneOf` of closed objects (one per event, `event` a `const`, every field required,
/// `additionalProperties` false); this reads that shape and no more.
public struct EventSchema: Sendable {
    /// The allowed JSON types (`string`, `integer`, `number`, `boolean`, `null`, `array`, `object`) of each field, by
    /// event name.
    public let events: [String: [String: Set<String>]]
    /// The strings a field may be, by event name and field, for fields the schema enumerates.
    public let values: [String: [String: Set<String>]]

    /// docs/cli-events.schema.json in this checkout, found from this source file's path.
    public static let path = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/cli-events.schema.json").path

    /// Reads the schema file.
    public static func load() throws -> EventSchema {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let variants = root["oneOf"] as? [[String: Any]]
        else { throw HuddleProcessError.commandFailed("\(path): no oneOf") }
        var events: [String: [String: Set<String>]] = [:]
        var values: [String: [String: Set<String>]] = [:]
        for variant in variants {
            guard let properties = variant["properties"] as? [String: [String: Any]],
                let name = properties["event"]?["const"] as? String
            else { throw HuddleProcessError.commandFailed("\(path): a variant without an event const") }
            var fields: [String: Set<String>] = [:]
            for (key, property) in properties where key != "event" {
                if let type = property["type"] as? String {
                    fields[key] = [type]
                } else if let types = property["type"] as? [String] {
                    fields[key] = Set(types)
                }
                if let allowed = property["enum"] as? [Any] {
                    values[name, default: [:]][key] = Set(allowed.compactMap { $0 as? String })
                    // An enum of strings alone (no `type`) is a string field (null too when it lists null): without
                    // this, such a field (`path` of `path-changed`) read as one the schema does not have.
                    if fields[key] == nil {
                        fields[key] = allowed.contains(where: { $0 is NSNull }) ? ["string", "null"] : ["string"]
                    }
                }
            }
            events[name] = fields
        }
        return EventSchema(events: events, values: values)
    }

    /// What is wrong with `line` against the schema (empty: nothing; a line that is not a JSON object is wrong).
    public func violations(of line: String) -> [String] {
        guard let data = line.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return ["not a JSON object: \(line)"] }
        guard let name = object["event"] as? String else { return ["no event name: \(line)"] }
        guard let fields = events[name] else { return ["event \(name) is not in the schema: \(line)"] }
        var problems: [String] = []
        for (key, allowed) in fields.sorted(by: { $0.key < $1.key }) {
            guard let value = object[key] else {
                problems.append("\(name): field \(key) missing")
                continue
            }
            let type = Self.type(of: value)
            if !allowed.contains(type), !(type == "integer" && allowed.contains("number")) {
                problems.append("\(name): field \(key) is \(type), the schema says \(allowed.sorted())")
            }
            if let enumerated = values[name]?[key], let text = value as? String, !enumerated.contains(text) {
                problems.append("\(name): field \(key) is \(text), the schema allows \(enumerated.sorted())")
            }
        }
        for key in object.keys where key != "event" && fields[key] == nil {
            problems.append("\(name): field \(key) is not in the schema")
        }
        return problems
    }

    /// The JSON type of a value `JSONSerialization` produced.
    static func type(of value: Any) -> String {
        switch value {
        case is NSNull: return "null"
        case is String: return "string"
        case is [Any]: return "array"
        case is [String: Any]: return "object"
        case let number as NSNumber:
            let code = String(cString: number.objCType)
            if code == "c" { return "boolean" }
            return code == "d" || code == "f" ? "number" : "integer"
        default: return "unknown"
        }
    }
}
