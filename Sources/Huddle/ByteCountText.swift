import Foundation

/// Sizes in messages for people: `100 MiB`, `1.5 KiB`, `512 bytes` (binary units, as the limits are defined).
enum ByteCountText {
    /// `count` in the largest binary unit it reaches, with up to two decimals and no trailing zeros.
    static func describe(_ count: Int) -> String {
        let units = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        for (size, unit) in units where count >= size {
            var text = String(format: "%.2f", Double(count) / Double(size))
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
            return "\(text) \(unit)"
        }
        return count == 1 ? "1 byte" : "\(count) bytes"
    }
}
