extension ProtocolLimits {
    /// Relays an endpoint registers with at once; ``Endpoint/addRelay(_:now:)`` ignores more.
    public static let maxRelays = 4
    /// A registered client refreshes its registration this often (well inside the 30 s a NAT keeps an idle UDP
    /// mapping, and inside the relay's ``relayServerRegistrationLifetime``).
    public static let relayRefreshInterval: Duration = .seconds(15)
    /// An unregistered client retries REGISTER after this long, doubling up to ``relayRefreshInterval``.
    public static let relayRetryInterval: Duration = .seconds(1)
    /// A client counts its registration as gone this long after the relay last confirmed it.
    public static let relayRegistrationLifetime: Duration = .seconds(45)
    /// A relay forgets a registration not refreshed for this long.
    public static let relayServerRegistrationLifetime: Duration = .seconds(60)
    /// A relay's challenge tokens are bound to time windows of this length; a token from the current or the
    /// previous window is accepted.
    public static let relayTokenWindow: Duration = .seconds(60)
    /// Registration events (``RelayServerEvent``) a relay keeps for its operator until polled; beyond it the oldest
    /// is dropped and counted (``RelayServerStatistics/eventsDropped``): a flood of registrations cannot grow memory.
    public static let relayServerEventQueueLimit = 1024
}
