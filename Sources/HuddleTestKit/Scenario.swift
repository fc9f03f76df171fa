import HuddleProtocol

/// A named simulation that runs one seed at a time and either passes with measurements or fails with a
/// ``SimulationFailure`` naming the seed, the options derived from it and the replay command.
public struct Scenario: Sendable {
    /// The name `huddle-sim --scenario` takes.
    public let name: String
    /// What it checks, in one line (TEST-MATRIX IDs in brackets).
    public let summary: String
    let body: @Sendable (UInt64) throws -> ScenarioOutcome

    /// A scenario with a body that runs one seed.
    public init(name: String, summary: String, body: @escaping @Sendable (UInt64) throws -> ScenarioOutcome) {
        self.name = name
        self.summary = summary
        self.body = body
    }

    /// Runs one seed. Failures carry the replay command for this scenario and seed.
    public func run(seed: UInt64) throws -> ScenarioOutcome {
        do {
            return try body(seed)
        } catch var failure as SimulationFailure {
            failure.replayCommand = Self.replayCommand(name: name, seed: seed)
            throw failure
        }
    }

    /// The command that replays `seed` of scenario `name`.
    public static func replayCommand(name: String, seed: UInt64) -> String {
        "swift run -c release huddle-sim --scenario \(name) --seeds \(seed)-\(seed)"
    }
}

/// What one seed of a scenario measured.
public struct ScenarioOutcome: Sendable {
    /// Virtual time the run took.
    public var simulatedTime: Duration
    /// Reliable messages delivered to applications.
    public var messagesDelivered: Int
    /// Reliable message bytes delivered.
    public var bytesDelivered: Int

    /// Message latencies the scenario measured (send to delivery, or to the echo's return), if any.
    public var latencies: [Duration]
    /// Named figures the scenario measured (fairness, queueing delay), in the order to print them; a report shows
    /// each one's mean over the seeds.
    public var measurements: [(name: String, value: Double)] = []

    /// An outcome.
    public init(simulatedTime: Duration, messagesDelivered: Int, bytesDelivered: Int, latencies: [Duration] = []) {
        self.simulatedTime = simulatedTime
        self.messagesDelivered = messagesDelivered
        self.bytesDelivered = bytesDelivered
        self.latencies = latencies
    }
}

/// The inclusive range of seeds parsed from `FIRST-LAST` (or a single number).
public func parseSeedRange(_ text: String) -> ClosedRange<UInt64>? {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    if parts.count == 1, let single = UInt64(parts[0]) { return single...single }
    guard parts.count == 2, let first = UInt64(parts[0]), let last = UInt64(parts[1]), first <= last else { return nil }
    return first...last
}
