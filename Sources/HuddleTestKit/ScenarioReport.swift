import HuddleProtocol

/// The result of running one scenario over a range of seeds: one line for people, one JSON object for scripts.
public struct ScenarioReport: Sendable {
    /// The scenario's name.
    public var name: String
    /// Seeds that ran (up to and including a failing one).
    public var seedsRun = 0
    /// Total virtual time simulated.
    public var simulatedTime: Duration = .zero
    /// Messages delivered over all seeds.
    public var messagesDelivered = 0
    /// Bytes delivered over all seeds.
    public var bytesDelivered = 0
    /// Number of latency samples over all seeds.
    public var latencySamples = 0
    /// Sum of the latency samples.
    public var latencyTotal: Duration = .zero
    /// The largest latency sample.
    public var latencyMax: Duration = .zero
    /// Each named measurement's sum over the seeds and how many seeds reported it, in first-seen order.
    public var measurementTotals: [(name: String, total: Double, count: Int)] = []
    /// The first failure, which stops the run.
    public var failure: SimulationFailure?
    /// Wall-clock seconds the run took (measured by the caller's clock).
    public var wallSeconds = 0.0

    /// Runs `scenario` for every seed in `seeds`, stopping at the first failure.
    public static func run(_ scenario: Scenario, seeds: ClosedRange<UInt64>) -> ScenarioReport {
        var report = ScenarioReport(name: scenario.name)
        let clock = ContinuousClock()
        let started = clock.now
        for seed in seeds {
            report.seedsRun += 1
            do {
                let outcome = try scenario.run(seed: seed)
                report.simulatedTime += outcome.simulatedTime
                report.messagesDelivered += outcome.messagesDelivered
                report.bytesDelivered += outcome.bytesDelivered
                for (name, value) in outcome.measurements {
                    if let index = report.measurementTotals.firstIndex(where: { $0.name == name }) {
                        report.measurementTotals[index].total += value
                        report.measurementTotals[index].count += 1
                    } else {
                        report.measurementTotals.append((name, value, 1))
                    }
                }
                report.latencySamples += outcome.latencies.count
                for latency in outcome.latencies {
                    report.latencyTotal += latency
                    report.latencyMax = max(report.latencyMax, latency)
                }
            } catch let failure as SimulationFailure {
                report.failure = failure
                break
            } catch {
                report.failure = SimulationFailure(
                    seed: seed, time: .zero, message: "\(error)", options: [],
                    replayCommand: Scenario.replayCommand(name: scenario.name, seed: seed))
                break
            }
        }
        let elapsed = clock.now - started
        report.wallSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return report
    }

    /// Goodput in simulated time: delivered bytes per simulated second.
    public var goodputBytesPerSecond: Double {
        let seconds = Double(simulatedTime.components.seconds) + Double(simulatedTime.components.attoseconds) / 1e18
        return seconds > 0 ? Double(bytesDelivered) / seconds : 0
    }

    /// Mean latency in milliseconds, when the scenario measured any.
    public var latencyMeanMilliseconds: Double? {
        latencySamples > 0 ? milliseconds(latencyTotal) / Double(latencySamples) : nil
    }

    /// `PASS clean  seeds 200  simulated 412.3 s  messages 39000  goodput 1.20 MB/s  wall 12.1 s`, plus
    /// `latency mean 95.1 ms max 612.0 ms` for scenarios that measure it and each named measurement's mean.
    public var line: String {
        let status = failure == nil ? "PASS" : "FAIL"
        let simulated = Double(simulatedTime.components.seconds) + Double(simulatedTime.components.attoseconds) / 1e18
        let latency =
            latencyMeanMilliseconds.map {
                "  latency mean \(format($0)) ms max \(format(milliseconds(latencyMax))) ms"
            } ?? ""
        let measured = measurementTotals.map { "  \($0.name) \(format($0.total / Double($0.count)))" }.joined()
        return
            "\(status) \(name)  seeds \(seedsRun)  simulated \(format(simulated)) s  messages \(messagesDelivered)  "
            + "goodput \(format(goodputBytesPerSecond / 1e6)) MB/s\(latency)\(measured)  wall \(format(wallSeconds)) s"
    }

    /// The same as one JSON object.
    public var json: String {
        let simulated = Double(simulatedTime.components.seconds) + Double(simulatedTime.components.attoseconds) / 1e18
        var fields = [
            "\"scenario\":\"\(name)\"", "\"passed\":\(failure == nil)", "\"seeds\":\(seedsRun)",
            "\"simulated_seconds\":\(format(simulated))", "\"messages\":\(messagesDelivered)",
            "\"bytes\":\(bytesDelivered)", "\"goodput_mb_per_s\":\(format(goodputBytesPerSecond / 1e6))",
            "\"wall_seconds\":\(format(wallSeconds))",
        ]
        if let mean = latencyMeanMilliseconds {
            fields.append("\"latency_mean_ms\":\(format(mean))")
            fields.append("\"latency_max_ms\":\(format(milliseconds(latencyMax)))")
        }
        for measurement in measurementTotals {
            fields.append("\"\(measurement.name)\":\(format(measurement.total / Double(measurement.count)))")
        }
        if let failure {
            fields.append("\"failed_seed\":\(failure.seed)")
            fields.append("\"replay\":\"\(failure.replayCommand ?? "")\"")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    private func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
    }

    private func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return String(rounded)
    }
}
