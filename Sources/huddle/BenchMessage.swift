import Foundation

/// The messages `huddle bench` exchanges (raw messenger bytes: one tag byte, then the fields, little-endian), kept
/// small so the measurement is of Huddle, not of an encoding.
enum BenchMessage: Equatable {
    /// A round-trip probe; the server sends it back unchanged.
    case echo(Data)
    /// One message of a rate test (its payload is padding).
    case rateMessage
    /// The rate test is over; the client sent `sent` messages.
    case rateEnd(sent: UInt64)
    /// The server received `received` messages of the rate test.
    case rateResult(received: UInt64)
    /// A piece of a bulk transfer.
    case bulkData
    /// The bulk transfer is over: `bytes` payload bytes were sent.
    case bulkEnd(bytes: UInt64)
    /// The server received `bytes` payload bytes of the bulk transfer.
    case bulkResult(bytes: UInt64)
    /// The server holds every verified byte of the attachment with `id`.
    case journalComplete(id: UUID)

    enum Tag: UInt8 {
        case echo = 1
        case rateMessage, rateEnd, rateResult, bulkData, bulkEnd, bulkResult, journalComplete
    }

    /// A message of `size` bytes in all: the tag and padding (for `rateMessage` and `bulkData`, whose size is
    /// what is measured) or the tag and the fields.
    static func padded(_ tag: Tag, size: Int) -> Data {
        var data = Data(count: max(1, size))
        data[0] = tag.rawValue
        return data
    }

    var encoded: Data {
        switch self {
        case .echo(let payload): return payload
        case .rateMessage: return Self.padded(.rateMessage, size: 1)
        case .rateEnd(let sent): return Self.withNumber(.rateEnd, sent)
        case .rateResult(let received): return Self.withNumber(.rateResult, received)
        case .bulkData: return Self.padded(.bulkData, size: 1)
        case .bulkEnd(let bytes): return Self.withNumber(.bulkEnd, bytes)
        case .bulkResult(let bytes): return Self.withNumber(.bulkResult, bytes)
        case .journalComplete(let id):
            var data = Data([Tag.journalComplete.rawValue])
            withUnsafeBytes(of: id.uuid) { data.append(contentsOf: $0) }
            return data
        }
    }

    /// Decodes `data` (payloads of echo, rate and bulk messages are not copied out); `nil` if it is not one.
    init?(decoding data: Data) {
        guard let first = data.first, let tag = Tag(rawValue: first) else { return nil }
        switch tag {
        case .echo: self = .echo(data)
        case .rateMessage: self = .rateMessage
        case .rateEnd: guard let value = Self.number(data) else { return nil }; self = .rateEnd(sent: value)
        case .rateResult: guard let value = Self.number(data) else { return nil }; self = .rateResult(received: value)
        case .bulkData: self = .bulkData
        case .bulkEnd: guard let value = Self.number(data) else { return nil }; self = .bulkEnd(bytes: value)
        case .bulkResult: guard let value = Self.number(data) else { return nil }; self = .bulkResult(bytes: value)
        case .journalComplete:
            guard data.count == 17 else { return nil }
            let bytes = Array(data.dropFirst())
            self = .journalComplete(
                id: UUID(
                    uuid: (
                        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                        bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                    )))
        }
    }

    private static func withNumber(_ tag: Tag, _ value: UInt64) -> Data {
        var data = Data([tag.rawValue])
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
        return data
    }

    private static func number(_ data: Data) -> UInt64? {
        guard data.count == 9 else { return nil }
        return data.dropFirst().reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
