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

    /// Members an endpoint registers with as relays at once (``Endpoint/addMemberRelay(_:at:now:)``), besides its
    /// dedicated relays: two, so two members that cannot meet still share one when either misses the other's first.
    public static let maxMemberRelays = 2
    /// The forwarding rate a member relay gives each member registered with it, in bytes per second (a token
    /// bucket, as a dedicated relay's): 2 MiB/s, enough for a session's messages and a slow attachment, while the
    /// member's own uplink stays its own.
    public static let memberRelayBytesPerSecond = 2 << 20
    /// The burst a member relay allows each member above its rate, in bytes.
    public static let memberRelayBurstBytes = 256 << 10
    /// Registrations a member relay holds at once (a session's roster cannot hold more members).
    public static let maxMemberRelayRegistrations = 256
    /// A member that has not confirmed a registration this long after the first REGISTER went to it does not relay
    /// (it opted out, or its version has no relay): its place goes to the next member.
    public static let memberRelayConfirmTimeout: Duration = .seconds(3)
    /// How long a member that did not confirm is passed over before it is asked again.
    public static let memberRelayDeclinePeriod: Duration = .seconds(300)
}
