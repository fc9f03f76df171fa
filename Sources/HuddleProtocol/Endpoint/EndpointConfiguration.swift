import HuddleCrypto

/// Everything an ``Endpoint`` needs besides randomness and time.
public struct EndpointConfiguration: Sendable {
    /// This node's identity; its X25519 key is the Noise static key.
    public var identity: Identity
    /// Bytes both sides must agree on, mixed into every handshake (e.g. protocol version and session id): a peer
    /// with a different prologue cannot complete a handshake (TEST-MATRIX H14).
    public var prologue: [UInt8]
    /// Settings for every connection.
    public var connection = ConnectionConfiguration()
    /// The wall-clock time at monotonic instant zero, read once by the driver; handshake timestamps count from it.
    public var wallClockAtOrigin: TAI64N
    /// More initiations than this in one second puts the endpoint "under load": initiations must then carry a
    /// valid `mac2` (a cookie) or get a cookie reply instead of a response.
    public var initiationsPerSecondBeforeCookies = 128
    /// A second initiation from the same peer sooner than this after an accepted one is dropped (a flood).
    public var minimumInitiationInterval: Duration = .milliseconds(20)

    /// Relays (their UDP addresses) the endpoint registers with, at most ``ProtocolLimits/maxRelays``: peers it
    /// cannot reach directly are reached through them, and they tell it its reflexive address.
    public var relays: [NetworkAddress] = []

    /// TURN servers (RFC 8656) the endpoint allocates on, at most ``ProtocolLimits/maxTurnServers``: a peer is also
    /// dialled through each allocation, and peers reach this node at the allocations' relayed addresses.
    public var turnServers: [TurnServer] = []

    /// STUN servers (their UDP addresses) the endpoint asks where they see it, at most
    /// ``ProtocolLimits/maxStunServers``: their answers are reflexive addresses (``Endpoint/reflexiveAddresses``).
    /// A server that is also a UDP TURN server is not asked twice: its allocation reports the same address.
    public var stunServers: [NetworkAddress] = []

    /// A configuration for `identity`.
    public init(identity: Identity, prologue: [UInt8], wallClockAtOrigin: TAI64N) {
        self.identity = identity
        self.prologue = prologue
        self.wallClockAtOrigin = wallClockAtOrigin
    }
}

/// What an endpoint needs to know about a peer it may talk to: its static key and the secrets shared with it.
public struct PeerCredentials: Sendable {
    /// The peer's Noise static key.
    public var staticKey: X25519PublicKey
    /// The pre-shared key mixed into handshakes with this peer (session- or invitation-derived).
    public var presharedKey: SecureBytes
    /// The secret `mac1` and cookie keys derive from: only holders can make this endpoint do handshake work.
    public var macSecret: SecureBytes

    /// Credentials for one peer.
    public init(staticKey: X25519PublicKey, presharedKey: SecureBytes, macSecret: SecureBytes) {
        self.staticKey = staticKey
        self.presharedKey = presharedKey
        self.macSecret = macSecret
    }
}
