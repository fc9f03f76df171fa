/// How a ``Messenger`` frames what it sends inside one Huddle message: a format version (1), a kind (0: a Codable
/// value as JSON, 1: raw bytes), the value's type name (varint length + UTF-8; empty for raw bytes), then the
/// payload. Receivers deliver a message only to subscriptions for the same kind and type name, and skip (count) what
/// they cannot decode, so a newer peer's new message types do not disturb an older one.
struct MessageEnvelope: Sendable {
    static let version: UInt8 = 1
    static let maxTypeNameBytes = 256

    enum Kind: UInt8, Sendable {
        case codable = 0
        case raw = 1
    }

    var kind: Kind
    var typeName: String
    var payload: [UInt8]

    func encoded() -> [UInt8] {
        let name = Array(typeName.utf8.prefix(Self.maxTypeNameBytes))
        var out: [UInt8] = [Self.version, kind.rawValue]
        out.reserveCapacity(4 + name.count + payload.count)
        if name.count < 128 {
            out.append(UInt8(name.count))
        } else {
            out.append(UInt8(0x80 | (name.count >> 8)))
            out.append(UInt8(truncatingIfNeeded: name.count))
        }
        out += name
        out += payload
        return out
    }

    init(kind: Kind, typeName: String, payload: [UInt8]) {
        self.kind = kind
        self.typeName = typeName
        self.payload = payload
    }

    /// Decodes an envelope, or `nil` for another version or a damaged one.
    init?(decoding bytes: [UInt8]) {
        guard bytes.count >= 3, bytes[0] == Self.version, let kind = Kind(rawValue: bytes[1]) else { return nil }
        var offset = 2
        var length = Int(bytes[offset])
        offset += 1
        if length & 0x80 != 0 {
            guard bytes.count > offset else { return nil }
            length = (length & 0x7F) << 8 | Int(bytes[offset])
            offset += 1
        }
        guard length <= Self.maxTypeNameBytes, bytes.count - offset >= length,
            let name = String(validating: bytes[offset..<(offset + length)], as: UTF8.self)
        else { return nil }
        self.kind = kind
        self.typeName = name
        self.payload = Array(bytes[(offset + length)...])
    }
}
