import ArgumentParser
import HuddleProtocol
import HuddleTestKit

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// `huddle-sim`: runs the protocol core's named scenarios in the seeded network simulator.
@main
struct HuddleSimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "huddle-sim",
        abstract: "Run Huddle's protocol scenarios in the deterministic network simulator.",
        discussion: """
            Every run is a pure function of its seed: a failure prints the seed, every option derived from it and \
            the command that replays it. Exits non-zero if any seed of any scenario fails.
            """
    )

    @Option(help: "Scenario name, or 'all'.")
    var scenario: String = "all"

    @Option(help: "Seeds to run, FIRST-LAST (inclusive).")
    var seeds: String = "1-10"

    @Flag(help: "Print one JSON object per scenario instead of a table line.")
    var json = false

    @Flag(help: "List the scenarios and exit.")
    var list = false

    @Option(
        help:
            "Congestion controller for every simulated connection: bbr, cubic or newreno (default: each scenario's own, BBR)."
    )
    var congestion: ConnectionConfiguration.CongestionControl?

    /// Starts over with `SWIFT_DETERMINISTIC_HASHING=1` unless it is set: Swift seeds `Hasher` per process, so the
    /// iteration order of a `Set` or `Dictionary` (in the simulator and in the cores it drives) would otherwise differ
    /// between runs, and a seed would not replay what it did in another process.
    static func main() {
        #if canImport(Glibc)
            if getenv("SWIFT_DETERMINISTIC_HASHING") == nil {
                setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
                execv("/proc/self/exe", CommandLine.unsafeArgv)
                // exec failed: carry on, but say that runs may not replay.
                fputs(
                    "huddle-sim: could not restart with SWIFT_DETERMINISTIC_HASHING=1; seeds may not replay\n", stderr)
            }
        #endif
        Self.main(nil)
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        if list {
            for scenario in Scenarios.all { print("\(scenario.name.padding(16))  \(scenario.summary)") }
            for scenario in Scenarios.onDemand + Scenarios.measurements {
                print("\(scenario.name.padding(16))  (only when named) \(scenario.summary)")
            }
            return
        }
        guard let range = parseSeedRange(seeds) else {
            throw ValidationError("--seeds must be FIRST-LAST with FIRST <= LAST, e.g. 1-200")
        }
        let selected: [Scenario]
        if scenario == "all" {
            selected = Scenarios.all
        } else if let named = Scenarios.named(scenario) {
            selected = [named]
        } else {
            throw ValidationError("unknown scenario '\(scenario)'; huddle-sim --list names them")
        }
        var failed = false
        for scenario in selected {
            let report = SimulationSettings.$congestionControl.withValue(congestion) {
                ScenarioReport.run(scenario, seeds: range)
            }
            print(json ? report.json : report.line)
            if let failure = report.failure {
                failed = true
                fputs("\(failure)\n", stderr)
            }
        }
        if failed { throw ExitCode.failure }
    }
}

extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}

extension ConnectionConfiguration.CongestionControl: ExpressibleByArgument {}
