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

    /// The churn seeds in eight parts, one test case each, so the runner spreads the suite's longest scenario over
    /// the cores instead of running it on one after everything else finished.
    static let churnSeedParts: [ClosedRange<UInt64>] = {
        let count = UInt64(churnSeeds.count)
        let parts = min(count, 8)
        return (0..<parts).map { part in
            churnSeeds.lowerBound + count * part / parts...churnSeeds.lowerBound + count * (part + 1) / parts - 1
        }
    }()

    @Test(
        "Membership churn: every reliable message delivered once, in order, or reported; the roster converges",
        arguments: churnSeedParts)
    func churn(seeds: ClosedRange<UInt64>) throws {
        let scenario = try #require(Scenarios.named("churn"))
        let report = ScenarioReport.run(scenario, seeds: seeds)
        print(report.line)
        #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
        #expect(report.seedsRun == seeds.count)
    }

    @Test("The churn parts cover the churn seed list exactly")
    func churnPartsCoverSeeds() {
        #expect(Self.churnSeedParts.flatMap { Array($0) } == Array(Self.churnSeeds))
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
