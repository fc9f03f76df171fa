import ArgumentParser

/// A size given on the command line: a number of bytes with an optional binary unit (`1500`, `64KiB`, `8MiB`,
/// `1GiB`; `K`, `M` and `G` mean the same), shown in `--help` in the same form.
struct ByteSize: ExpressibleByArgument, Sendable, Equatable {
    /// The size in bytes.
    var bytes: Int

    init(bytes: Int) { self.bytes = bytes }

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces)
        let digits = text.prefix { $0.isNumber }
        guard let number = Int(digits) else { return nil }
        let unit = text.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        let shift: Int
        switch unit {
        case "", "b": shift = 0
        case "k", "kib": shift = 10
        case "m", "mib": shift = 20
        case "g", "gib": shift = 30
        default: return nil
        }
        let (value, overflow) = number.multipliedReportingOverflow(by: 1 << shift)
        guard !overflow else { return nil }
        bytes = value
    }

    var defaultValueDescription: String {
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")]
        where bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return "\(bytes)"
    }
}
