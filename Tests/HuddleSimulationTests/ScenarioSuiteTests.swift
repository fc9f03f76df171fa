import Foundation
import HuddleTestKit
import Testing

/// Every named scenario over the committed seed list (`seeds.txt`, 200 seeds), or over `HUDDLE_SEEDS=FIRST-LAST`.
/// A failure prints the seed, every option derived from it and the `huddle-sim` command that replays it.
///
/// `make test` runs this suite in release mode (`swift test -c release --filter HuddleSimulationTests`): the
/// scenarios move tens of megabytes per seed through the full protocol stack.
@Suite("Simulation scenarios")
struct ScenarioSuiteTests {
    static let seeds = seedRange(environment: "HUDDLE_SEEDS", file: "seeds.txt")

    /// The seeds `$environment` names (FIRST-LAST), else those in `file` beside this source file.
    static func seedRange(environment: String, file name: String) -> ClosedRange<UInt64> {
        if let override = ProcessInfo.processInfo.environment[environment] {
            guard let range = parseSeedRange(override) else { fatalError("\(environment) must be FIRST-LAST") }
            return range
        }
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(name)
        let text = (try? String(contentsOf: file, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let text, let range = parseSeedRange(text) else { fatalError("\(name) must hold FIRST-LAST") }
        return range
    }

    @Test("The committed seed list covers at least 200 seeds")
    func seedListSize() {
        if ProcessInfo.processInfo.environment["HUDDLE_SEEDS"] == nil {
            #expect(Self.seeds.count >= 200)
        }
    }

    /// The churn scenario's seeds: `churn-seeds.txt`, or `HUDDLE_CHURN_SEEDS=FIRST-LAST`.
    static let churnSeeds = seedRange(environment: "HUDDLE_CHURN_SEEDS", file: "churn-seeds.txt")
    /// The seeds of its `churn-schedule` variant (each seed also bends the schedule): `churn-schedule-seeds.txt`,
    /// or `HUDDLE_CHURN_SCHEDULE_SEEDS=FIRST-LAST` (`make churn-schedule` runs 1,000 fresh ones).
    static let churnScheduleSeeds = seedRange(
        environment: "HUDDLE_CHURN_SCHEDULE_SEEDS", file: "churn-schedule-seeds.txt")

    /// `seeds` in eight parts, one test case each, so the runner spreads the suite's longest scenarios over the cores
    /// instead of running them on one after everything else finished.
    static func parts(of seeds: ClosedRange<UInt64>) -> [ClosedRange<UInt64>] {
        let count = UInt64(seeds.count)
        let parts = min(count, 8)
        return (0..<parts).map { part in
            seeds.lowerBound + count * part / parts...seeds.lowerBound + count * (part + 1) / parts - 1
        }
    }

    /// Both churn scenarios' seed parts, as (scenario, part) test arguments.
    static let churnCases: [(String, ClosedRange<UInt64>)] =
        parts(of: churnSeeds).map { ("churn", $0) } + parts(of: churnScheduleSeeds).map { ("churn-schedule", $0) }

    @Test(
        "Membership churn under the default and explored schedules: each message delivered once in order or reported",
        arguments: churnCases)
    func churn(scenario name: String, seeds: ClosedRange<UInt64>) throws {
        let scenario = try #require(Scenarios.named(name))
        let report = ScenarioReport.run(scenario, seeds: seeds)
        print(report.line)
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.seedsRun == seeds.count)
    }

    /// The large-session seed `make test` runs (`HUDDLE_LARGE_SEEDS=FIRST-LAST` for others; `make large-sessions`
    /// runs 64, 128 and 256 members on demand).
    static let largeSeeds = ProcessInfo.processInfo.environment["HUDDLE_LARGE_SEEDS"].flatMap(parseSeedRange) ?? 1...1

    @Test("64 members on one address join in bursts, churn and split: exactly-once, one roster, a full mesh")
    func largeSession() throws {
        let scenario = try #require(Scenarios.named("large-64"))
        let report = ScenarioReport.run(scenario, seeds: Self.largeSeeds)
        print(report.line)
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.seedsRun == Self.largeSeeds.count)
    }

    @Test("The churn parts cover the seed lists exactly; the explored variant runs at least 200 committed seeds")
    func churnPartsCoverSeeds() {
        #expect(Self.parts(of: Self.churnSeeds).flatMap { Array($0) } == Array(Self.churnSeeds))
        #expect(Self.parts(of: Self.churnScheduleSeeds).flatMap { Array($0) } == Array(Self.churnScheduleSeeds))
        if ProcessInfo.processInfo.environment["HUDDLE_CHURN_SCHEDULE_SEEDS"] == nil {
            #expect(Self.churnScheduleSeeds.count >= 200)
        }
    }

    @Test("Scenario passes for every seed", arguments: Scenarios.all.map(\.name))
    func scenario(name: String) throws {
        let scenario = try #require(Scenarios.named(name))
        let report = ScenarioReport.run(scenario, seeds: Self.seeds)
        print(report.line)
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.seedsRun == Self.seeds.count)
    }
}
