extension ProtocolLimits {
    /// TURN servers an endpoint allocates on at once; ``Endpoint/addTurnServer(_:credentials:now:)`` ignores more.
    public static let maxTurnServers = 2
    /// Peer addresses one TURN allocation binds channels to (each is a peer address this node sends to through the
    /// server); beyond it, the oldest binding is no longer refreshed and lapses at the server.
    public static let maxTurnChannels = 256
    /// IP addresses one TURN allocation keeps permissions for; beyond it, the oldest is no longer refreshed.
    public static let maxTurnPermissions = 256
    /// The first retransmission timeout of a STUN request over UDP (RFC 8489 6.2.1), doubling on each retry.
    public static let turnInitialRetransmission: Duration = .milliseconds(500)
    /// Sends of one STUN request before it fails (RFC 8489's Rc: about 39.5 s in all).
    public static let turnRequestAttempts = 7
    /// The allocation lifetime asked for; servers may grant less (RFC 8656 default 600 s).
    public static let turnRequestedLifetime: Duration = .seconds(600)
    /// A refresh goes this long before the allocation, a channel or a permission would expire.
    public static let turnRefreshMargin: Duration = .seconds(60)
    /// A permission lasts this long at the server (RFC 8656 9); a channel binding lasts ``turnChannelLifetime``.
    public static let turnPermissionLifetime: Duration = .seconds(300)
    /// A channel binding lasts this long at the server (RFC 8656 12).
    public static let turnChannelLifetime: Duration = .seconds(600)
    /// A Binding indication goes to the server after this long without sending it anything, which keeps a NAT's
    /// mapping toward it open (the allocation's own refreshes are minutes apart).
    public static let turnKeepaliveInterval: Duration = .seconds(15)
    /// After a failed allocation the client tries again this long later.
    public static let turnRetryAfterFailure: Duration = .seconds(30)
}
