extension ProtocolLimits {
    /// TURN servers an endpoint allocates on at once (a server over UDP and over TCP counts twice);
    /// ``Endpoint/addTurnServer(_:now:)`` ignores more.
    public static let maxTurnServers = 4
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
    /// STUN servers an endpoint asks for its reflexive address (``EndpointConfiguration/stunServers``).
    public static let maxStunServers = 4
    /// A STUN server is asked again this often: a NAT's mapping toward it stays open (many expire UDP mappings after
    /// 30 s) and a moved mapping is noticed.
    public static let stunRefreshInterval: Duration = .seconds(25)
    /// Sends of one Binding request (at 0, 0.5 and 1.5 s) before it waits for the next refresh.
    public static let stunRequestAttempts = 3
    /// After a failed allocation the client tries again this long later.
    public static let turnRetryAfterFailure: Duration = .seconds(30)
    /// Over TCP a request goes once; with no answer this long it fails (RFC 8489 6.2.2's Ti).
    public static let turnStreamRequestTimeout: Duration = .milliseconds(39_500)
    /// A TCP server given with a UDP one starts this long after the endpoint when no UDP allocation was granted by
    /// then (the UDP Allocate has gone three times without an answer: 0, 0.5 and 1.5 s), and at once when a UDP
    /// allocation is lost.
    public static let turnStreamFallbackDelay: Duration = .seconds(2)
    /// Bytes of peers' packets one TCP connection to a TURN server may have waiting for the socket; packets beyond
    /// it are dropped (and counted in ``EndpointStatistics/turnPacketsDropped``), as a full link drops them, so the
    /// connection's congestion control sees the socket's limit as loss.
    public static let maxTurnStreamQueuedBytes = 262_144
}
