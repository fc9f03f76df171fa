import Foundation
import HuddleCrypto
import HuddleWire
import Testing

// Shared loading and comparison for the suites that check Swift against docs/vectors/*.json (issue 19).
//
// The JSON files are read straight from the repository, located from this file's #filePath, so there is one copy:
// the one `scripts/vectors/generate.py` writes. Each suite asserts its file's exact case count and that every case
// name falls in one of the groups it tests, so a case added to a file (or a file that stops loading) fails a test
// instead of being skipped.

/// A JSON value as the vector files hold it. Numbers are non-negative integers (some above 2^53), decoded as `UInt64`
/// straight from their digits by `JSONDecoder`, never through `Double`.
enum JSON: Hashable, Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(UInt64)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// Compact JSON text with sorted keys, for failure messages.
    var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let value): String(value)
        case .string(let value): "\"\(value)\""
        case .array(let values): "[" + values.map(\.description).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.keys.sorted().map { "\"\($0)\":\(members[$0]!)" }.joined(separator: ",") + "}"
        }
    }

    /// Lowercase hex, the vector files' form of a byte string.
    static func hex(_ bytes: some Sequence<UInt8>) -> JSON { .string(hexString(bytes)) }

    /// An integer field.
    static func int(_ value: some BinaryInteger) -> JSON { .number(UInt64(value)) }

    /// The member `key` of an object; throws if this is not an object or has no such member.
    func value(_ key: String) throws -> JSON {
        guard case .object(let members) = self else { throw VectorError.wrongType(key, expected: "object", in: self) }
        guard let member = members[key] else { throw VectorError.missingKey(key, in: self) }
        return member
    }

    /// Whether this object has a member `key` that is not null.
    func has(_ key: String) -> Bool {
        guard case .object(let members) = self, let member = members[key] else { return false }
        return member != .null
    }

    /// This object without the members `keys` (to compare the rest).
    func removing(_ keys: String...) -> JSON {
        guard case .object(var members) = self else { return self }
        for key in keys { members[key] = nil }
        return .object(members)
    }

    func string() throws -> String {
        guard case .string(let text) = self else { throw VectorError.wrongType("", expected: "string", in: self) }
        return text
    }

    func uint64() throws -> UInt64 {
        guard case .number(let value) = self else { throw VectorError.wrongType("", expected: "number", in: self) }
        return value
    }

    func int() throws -> Int { Int(try uint64()) }

    func bytes() throws -> [UInt8] {
        let text = try string()
        guard let bytes = bytesFromHex(text) else { throw VectorError.wrongType("", expected: "hex", in: self) }
        return bytes
    }

    func array() throws -> [JSON] {
        guard case .array(let values) = self else { throw VectorError.wrongType("", expected: "array", in: self) }
        return values
    }

    func string(_ key: String) throws -> String { try value(key).string() }
    func uint64(_ key: String) throws -> UInt64 { try value(key).uint64() }
    func int(_ key: String) throws -> Int { try value(key).int() }
    func bytes(_ key: String) throws -> [UInt8] { try value(key).bytes() }
    func array(_ key: String) throws -> [JSON] { try value(key).array() }
}

extension JSON: Decodable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            // Anything else (a negative or fractional number) is not in the schema: decoding it as an object throws.
            self = .object(try container.decode([String: JSON].self))
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByBooleanLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: UInt64) { self = .number(value) }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Picks the cases of a file that one test handles.
typealias CaseFilter = @Sendable (JSON) -> Bool

enum VectorError: Error, CustomStringConvertible {
    case missingFile(String)
    case missingKey(String, in: JSON)
    case wrongType(String, expected: String, in: JSON)
    case missingCase(file: String, name: String)

    var description: String {
        switch self {
        case .missingFile(let path): "cannot read \(path)"
        case .missingKey(let key, let json): "no key \"\(key)\" in \(String(describing: json).prefix(300))"
        case .wrongType(let key, let expected, let json):
            "\(key.isEmpty ? "value" : key) is not a \(expected): \(String(describing: json).prefix(300))"
        case .missingCase(let file, let name): "\(file).json has no case \"\(name)\""
        }
    }
}

/// One file of docs/vectors, parsed.
struct VectorFile: Sendable {
    /// The file's name without `.json`.
    let name: String
    /// The whole document.
    let document: JSON
    /// Its cases, in file order.
    let cases: [JSON]

    /// docs/vectors in this checkout, found from this source file's path (Tests/HuddleVectorTests/...).
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/vectors")

    private static let cache = Cache()

    /// Loads `docs/vectors/<name>.json` (once per process).
    static func load(_ name: String) throws -> VectorFile {
        if let cached = cache.get(name) { return cached }
        let url = directory.appendingPathComponent(name + ".json")
        guard let data = try? Data(contentsOf: url) else { throw VectorError.missingFile(url.path) }
        let document = try JSONDecoder().decode(JSON.self, from: data)
        let file = VectorFile(name: name, document: document, cases: try document.array("cases"))
        cache.set(name, file)
        return file
    }

    /// The names of the cases of `file` for which `belongs` holds, for a parameterized test's arguments. An unreadable
    /// file gives no names here; that file's count test then fails.
    static func names(_ file: String, where belongs: (JSON) -> Bool = { _ in true }) -> [String] {
        guard let loaded = try? load(file) else { return [] }
        return loaded.cases.filter(belongs).compactMap { try? $0.string("name") }
    }

    /// The case called `name`.
    func callAsFunction(_ name: String) throws -> JSON {
        guard let found = cases.first(where: { (try? $0.string("name")) == name }) else {
            throw VectorError.missingCase(file: self.name, name: name)
        }
        return found
    }

    private final class Cache: @unchecked Sendable {
        private let lock = NSLock()
        private var files: [String: VectorFile] = [:]

        func get(_ name: String) -> VectorFile? { lock.withLock { files[name] } }
        func set(_ name: String, _ file: VectorFile) { lock.withLock { files[name] = file } }
    }
}

/// Checks the parts every suite shares: `file` has exactly `count` cases, unique names, and every case is in exactly
/// one of `groups` (a group is a name and a membership test), so no case goes untested.
func expectCoverage(
    of file: String, count: Int, groups: [(String, CaseFilter)], sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let loaded = try VectorFile.load(file)
    #expect(loaded.cases.count == count, "\(file).json case count", sourceLocation: sourceLocation)
    let names = try loaded.cases.map { try $0.string("name") }
    #expect(Set(names).count == names.count, "\(file).json has duplicate case names", sourceLocation: sourceLocation)
    for (index, vector) in loaded.cases.enumerated() {
        let matching = groups.filter { $0.1(vector) }.map(\.0)
        #expect(
            matching.count == 1, "\(file).json case \(names[index]) is in groups \(matching), expected exactly one",
            sourceLocation: sourceLocation)
    }
}

/// Lowercase hex of `bytes`.
func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Decodes hex, or returns `nil` if `text` is not hex.
func bytesFromHex(_ text: String) -> [UInt8]? {
    let scalars = Array(text.utf8)
    guard scalars.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(scalars.count / 2)
    for index in stride(from: 0, to: scalars.count, by: 2) {
        guard let byte = UInt8(String(decoding: scalars[index..<(index + 2)], as: UTF8.self), radix: 16) else {
            return nil
        }
        out.append(byte)
    }
    return out
}

/// Runs `body` over the bytes of `array`, forwarding its typed error.
func withBytes<Result>(
    _ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(WireError) -> Result
) throws(WireError) -> Result {
    let outcome: Swift.Result<Result, WireError> = array.withUnsafeBytes { raw in
        Swift.Result { () throws(WireError) in try body(raw) }
    }
    return try outcome.get()
}

/// What `body` reads from a `ByteReader` over `array`.
func reading<Result>(
    _ array: [UInt8], _ body: (inout ByteReader) throws(WireError) -> Result
) throws(WireError) -> Result {
    try withBytes(array) { raw throws(WireError) in
        var reader = ByteReader(raw)
        return try body(&reader)
    }
}

/// A "random" source that hands out fixed bytes in order: how the tests give Swift code that draws keys or secrets
/// from a generator (ephemeral keys, cookie secrets, relay token secrets) the vector's fixed inputs.
struct FixedBytes: RandomBytesGenerator {
    private var queue: [UInt8]
    /// Whether more bytes were asked for than were given (they were then zeros, and the test fails).
    private(set) var overdrawn = false

    init(_ chunks: [UInt8]...) {
        queue = chunks.flatMap { $0 }
    }

    var isEmpty: Bool { queue.isEmpty }

    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        let take = min(buffer.count, queue.count)
        if take < buffer.count { overdrawn = true }
        for index in 0..<buffer.count { buffer[index] = index < take ? queue[index] : 0 }
        queue.removeFirst(take)
    }
}

extension SecureBytes {
    /// The bytes, for comparison with a vector (test code only: it copies a secret).
    var bytes: [UInt8] { copyToArray() }
}

extension WireError {
    /// The vector files' name for this error: the Swift case name (docs/vectors/README.md).
    var vectorName: String {
        switch self {
        case .truncated: "truncated"
        case .bufferTooSmall: "bufferTooSmall"
        case .unknownPacketType: "unknownPacketType"
        case .unexpectedPacketType: "unexpectedPacketType"
        case .unknownFrameType: "unknownFrameType"
        case .lengthOutOfRange: "lengthOutOfRange"
        case .valueOutOfRange: "valueOutOfRange"
        case .tooManyAckRanges: "tooManyAckRanges"
        case .invalidAckRange: "invalidAckRange"
        case .fragmentOutOfBounds: "fragmentOutOfBounds"
        case .nonZeroReserved: "nonZeroReserved"
        case .trailingBytes: "trailingBytes"
        case .invalidUTF8: "invalidUTF8"
        case .varIntOutOfRange: "varIntOutOfRange"
        case .invalidFieldLength: "invalidFieldLength"
        }
    }
}

/// A wire address as the vector files write it: `{"family", "ip", "port"}`.
func addressJSON(_ address: WireAddress) -> JSON {
    ["family": .int(address.family), "ip": .hex(address.bytes), "port": .int(address.port)]
}

/// A ``WireAddress`` from its vector form.
func wireAddress(_ json: JSON) throws -> WireAddress {
    try WireAddress(
        family: UInt8(try json.uint64("family")), bytes: try json.bytes("ip"), port: UInt16(try json.uint64("port")))
}
