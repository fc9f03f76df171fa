/// Counters a ``RelayServer`` keeps.
public struct RelayServerStatistics: Sendable, Hashable {
    /// Datagrams received.
    public var datagramsReceived = 0
    /// Datagrams that were not relay packets or were malformed.
    public var malformedDropped = 0
    /// Challenges sent (REGISTER without a valid token).
    public var challengesSent = 0
    /// REGISTERs with a valid token and a wrong MAC (a client that does not hold the key it names), or naming a key
    /// the relay does not admit (``RelayServer/admittedKeys``).
    public var registrationsRefused = 0
    /// Registrations refused because ``RelayServerConfiguration/maxRegistrations`` were held.
    public var registrationsOverLimit = 0
    /// Registrations confirmed (new ones and refreshes).
    public var registrationsConfirmed = 0
    /// Packets forwarded, and their bytes.
    public var packetsForwarded = 0
    public var bytesForwarded = 0
    /// RELAY_SEND from an address with no registration (the relay is not an open proxy).
    public var unregisteredSourceDropped = 0
    /// RELAY_SEND to a key with no registration.
    public var unknownDestinationDropped = 0
    /// RELAY_SEND over the sender's rate.
    public var rateLimitedDropped = 0
    /// Packets a client sent, and bytes, that were dropped over its rate.
    public var rateLimitedBytes = 0

    /// Registration events dropped, the oldest first, because ``ProtocolLimits/relayServerEventQueueLimit`` were
    /// waiting to be polled.
    public var eventsDropped = 0

    /// No counts yet.
    public init() {}
}
