import Foundation

/// What one `huddle bench run` measured, printed as a table or as one JSON object whose keys are always present
/// (`null` where a figure does not apply to the test).
struct BenchResult: Encodable {
    var test: String
    var bytes: UInt64?
    var seconds: Double?
    var messages: Int?
    var mbPerS: Double?
    var messagesPerS: Double?
    var p50Us: Double?
    var p90Us: Double?
    var p99Us: Double?
    var p999Us: Double?
    var maxUs: Double?

    enum CodingKeys: String, CodingKey {
        case test, bytes, seconds, messages
        case mbPerS = "mb_per_s"
        case messagesPerS = "messages_per_s"
        case p50Us = "p50_us"
        case p90Us = "p90_us"
        case p99Us = "p99_us"
        case p999Us = "p999_us"
        case maxUs = "max_us"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(test, forKey: .test)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(seconds, forKey: .seconds)
        try container.encode(messages, forKey: .messages)
        try container.encode(mbPerS, forKey: .mbPerS)
        try container.encode(messagesPerS, forKey: .messagesPerS)
        try container.encode(p50Us, forKey: .p50Us)
        try container.encode(p90Us, forKey: .p90Us)
        try container.encode(p99Us, forKey: .p99Us)
        try container.encode(p999Us, forKey: .p999Us)
        try container.encode(maxUs, forKey: .maxUs)
    }

    /// Latency figures from samples in seconds.
    mutating func setLatencies(_ samples: [Double]) {
        let sorted = samples.sorted()
        func percentile(_ fraction: Double) -> Double? {
            guard !sorted.isEmpty else { return nil }
            let index = min(sorted.count - 1, Int((fraction * Double(sorted.count - 1)).rounded()))
            return (sorted[index] * 1e7).rounded() / 10
        }
        messages = sorted.count
        p50Us = percentile(0.5)
        p90Us = percentile(0.9)
        p99Us = percentile(0.99)
        p999Us = percentile(0.999)
        maxUs = percentile(1)
    }

    /// The result as one line of JSON.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The result as lines for people.
    var table: String {
        var rows: [(String, String)] = [("test", test)]
        if let bytes { rows.append(("bytes", "\(bytes)")) }
        if let seconds { rows.append(("seconds", String(format: "%.3f", seconds))) }
        if let messages { rows.append(("messages", "\(messages)")) }
        if let mbPerS { rows.append(("MB/s", String(format: "%.1f", mbPerS))) }
        if let messagesPerS { rows.append(("messages/s", String(format: "%.0f", messagesPerS))) }
        for (name, value) in [("p50", p50Us), ("p90", p90Us), ("p99", p99Us), ("p99.9", p999Us), ("max", maxUs)] {
            if let value { rows.append(("\(name) us", String(format: "%.1f", value))) }
        }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
            .joined(separator: "\n")
    }
}
