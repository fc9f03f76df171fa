import HuddleProtocol
import HuddleWire

/// Settings a whole simulation run can override without every scenario taking a parameter: `huddle-sim
/// --congestion cubic` runs every scenario with CUBIC, so controllers are compared on the same seeds.
public enum SimulationSettings {
    /// The congestion controller every simulated endpoint uses, or `nil` for each scenario's own configuration.
    @TaskLocal public static var congestionControl: ConnectionConfiguration.CongestionControl?

    /// `configuration` with this run's overrides applied. Simulated endpoints probe for larger datagrams as the UDP
    /// transport's do (unless the configuration says otherwise): a simulated link drops what exceeds its MTU, as a
    /// path does with the don't-fragment bit set.
    static func applied(to configuration: ConnectionConfiguration) -> ConnectionConfiguration {
        var configuration = configuration
        if let congestionControl { configuration.congestionControl = congestionControl }
        if configuration.maxProbedDatagramSize == nil {
            configuration.maxProbedDatagramSize = WireLimits.maxDatagramSize
        }
        return configuration
    }
}
