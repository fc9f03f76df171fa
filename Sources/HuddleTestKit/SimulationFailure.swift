import HuddleProtocol

/// A broken invariant or a scenario that did not finish, with everything needed to replay it.
public struct SimulationFailure: Error, CustomStringConvertible, Sendable {
    /// The run's seed.
    public var seed: UInt64
    /// Virtual time when the failure was detected.
    public var time: Instant
    /// What went wrong.
    public var message: String
    /// Every option derived from the seed (link conditions, sizes, schedules).
    public var options: [String]
    /// A command that replays exactly this run.
    public var replayCommand: String?

    /// A failure record.
    public init(seed: UInt64, time: Instant, message: String, options: [String], replayCommand: String? = nil) {
        self.seed = seed
        self.time = time
        self.message = message
        self.options = options
        self.replayCommand = replayCommand
    }

    public var description: String {
        var lines = ["simulation failed: \(message)", "  seed: \(seed)", "  at: \(time)"]
        lines += options.map { "  option: \($0)" }
        if let replayCommand { lines.append("  replay: \(replayCommand)") }
        return lines.joined(separator: "\n")
    }
}
