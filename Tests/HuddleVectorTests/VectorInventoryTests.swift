import Foundation
import Testing

/// The whole of docs/vectors: exactly the files these suites check, with the case counts they assert (252 in all),
/// so a new vector file, or one no suite reads, fails here.
@Suite("Vectors: inventory")
struct VectorInventoryTests {
    /// Each file and the number of cases its suite checks.
    static let counts = [
        "varint": 24, "frames": 36, "packets": 23, "handshake": 9, "kdf": 13, "tickets": 28, "control": 23,
        "envelopes": 7, "journal": 75, "relay": 9, "cli": 5,
    ]

    @Test("docs/vectors holds exactly the checked files, 252 cases")
    func inventory() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: VectorFile.directory.path)
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(".json".count)) }
        #expect(Set(names) == Set(Self.counts.keys))
        #expect(Self.counts.values.reduce(0, +) == 252)
        for (name, count) in Self.counts {
            #expect(try VectorFile.load(name).cases.count == count, "\(name).json")
        }
    }
}
