import HuddleProtocol

/// Settings a whole simulation run can override without every scenario taking a parameter: `huddle-sim
/// --congestion cubic` runs every scenario with CUBIC, so controllers are compared on the same seeds.
public enum SimulationSettings {
    /// The congestion controller every simulated endpoint uses, or `nil` for each scenario's own configuration.
    @TaskLocal public static var congestionControl: ConnectionConfiguration.CongestionControl?

    /// `configuration` with this run's overrides applied.
    static func applied(to configuration: ConnectionConfiguration) -> ConnectionConfiguration {
        var configuration = configuration
        if let congestionControl { configuration.congestionControl = congestionControl }
        return configuration
    }
}
