import HuddleCrypto

/// The settings of a ``RelayServer``.
public struct RelayServerConfiguration: Sendable {
    /// The relay's static X25519 key: clients prove their own keys against it.
    public var identity: Identity
    /// Most clients registered at once; registrations beyond it are refused (and counted) until one expires.
    public var maxRegistrations = 4096
    /// The forwarding rate each client gets, in bytes per second (a token bucket); packets beyond it are dropped
    /// and counted, so a greedy client cannot take the relay's bandwidth from the others.
    public var bytesPerSecondPerClient = 8 << 20
    /// The burst a client may send above its rate, in bytes.
    public var burstBytesPerClient = 1 << 20

    /// A configuration with `identity` and the default limits.
    public init(identity: Identity) {
        self.identity = identity
    }
}
