import HuddleProtocol
import Testing

@Suite("Replay window")
struct ReplayWindowTests {
    /// WireGuard's RejectAfterMessages, the limit its replay table is written against.
    static let rejectAfter: UInt64 = UInt64.max - (1 << 4)

    @Test("The window is 8128 packets wide")
    func width() {
        #expect(ReplayWindow.width == 8128)
    }

    /// TEST-MATRIX K4: the accept/reject sequence of wireguard-go's replay table (34 steps), which the Linux kernel
    /// implementation also uses.
    @Test("Matches the wireguard-go replay table step for step (K4)")
    func wireguardTable() {
        var window = ReplayWindow(limit: Self.rejectAfter)
        let lim = ReplayWindow.width + 1
        let reject = Self.rejectAfter
        let steps: [(UInt64, Bool)] = [
            (0, true), (1, true), (1, false), (9, true), (8, true), (7, true), (7, false), (lim, true),
            (lim - 1, true), (lim - 1, false), (lim - 2, true), (2, true), (2, false), (lim + 16, true), (3, false),
            (lim + 16, false), (lim * 4, true), (lim * 4 - (lim - 1), true), (10, false), (lim * 4 - lim, false),
            (lim * 4 - (lim + 1), false), (lim * 4 - (lim - 2), true), (lim * 4 + 1 - lim, false), (0, false),
            (reject, false), (reject - 1, true), (reject, false), (reject - 1, false), (reject - 2, true),
            (reject + 1, false), (reject + 2, false), (reject - 2, false), (reject - 3, true), (0, false),
        ]
        #expect(steps.count == 34)
        for (index, (number, expected)) in steps.enumerated() {
            #expect(window.wouldAccept(number) == expected, "pre-check, step \(index + 1): \(number)")
            let accepted = window.accept(number)
            #expect(accepted == expected, "step \(index + 1): \(number)")
        }
    }

    @Test("Matches the wireguard-go bulk runs (K4)")
    func wireguardBulk() {
        let width = ReplayWindow.width
        let runs: [[(UInt64, Bool)]] = [
            (1...width).map { ($0, true) } + [(0, true), (0, false)],
            (2...(width + 1)).map { ($0, true) } + [(1, true), (0, false)],
            stride(from: width + 1, to: 0, by: -1).map { ($0, true) },
            stride(from: width + 2, to: 1, by: -1).map { ($0, true) } + [(0, false)],
            stride(from: width, to: 0, by: -1).map { ($0, true) } + [(width + 1, true), (0, false)],
            stride(from: width, to: 0, by: -1).map { ($0, true) } + [(0, true), (width + 1, true)],
        ]
        for (runIndex, run) in runs.enumerated() {
            var window = ReplayWindow(limit: Self.rejectAfter)
            var mismatches: [UInt64] = []
            for (number, expected) in run where window.accept(number) != expected {
                mismatches.append(number)
            }
            #expect(mismatches.isEmpty, "bulk run \(runIndex + 1): unexpected decisions for \(mismatches.prefix(5))")
        }
    }

    @Test("The pre-check never changes the window (R4: a forged 2^61 does not advance it)")
    func preCheckIsReadOnly() {
        var window = ReplayWindow()
        let first = window.accept(100)
        #expect(first)
        #expect(window.wouldAccept(1 << 61))  // would pass the pre-check, then fail authentication
        #expect(!window.wouldAccept(ProtocolLimits.rejectAfterPackets))
        #expect(window.highestAccepted == 100)
        let behind = window.accept(50)
        #expect(behind, "legitimate packets behind 100 are still accepted")
        let next = window.accept(101)
        #expect(next)
    }

    /// TEST-MATRIX FZ8 (as a seeded differential test): the window decides exactly like a naive set of every
    /// accepted number, bounded to the window.
    @Test("Decides like a naive set model over random traffic", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func differential(seed: UInt64) {
        var window = ReplayWindow(limit: 1 << 20)
        var seen = Set<UInt64>()
        var highest: UInt64 = 0
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        func nextRandom() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        for _ in 0..<20_000 {
            let roll = nextRandom() % 100
            let candidate: UInt64
            if roll < 60 {
                candidate = highest + nextRandom() % 40
            } else if roll < 95 {
                candidate = highest &- min(highest, nextRandom() % 9000)
            } else {
                candidate = nextRandom() % (1 << 21)
            }
            let expected =
                candidate < (1 << 20) && !seen.contains(candidate)
                && (candidate > highest || highest - candidate <= ReplayWindow.width)
            #expect(window.wouldAccept(candidate) == expected)
            let accepted = window.accept(candidate)
            #expect(accepted == expected, "seed \(seed), candidate \(candidate)")
            if expected {
                seen.insert(candidate)
                highest = max(highest, candidate)
            }
        }
    }
}
