/// Every bound the protocol core enforces, by name. Each has a test at the limit.
public enum ProtocolLimits {
    /// Packet numbers at or above this are never sent or accepted under one key: 2^62, the first number an ACK
    /// frame's varints cannot express. A connection rekeys long before, at ``rekeyAfterPackets``. (WireGuard's
    /// equivalent, RejectAfterMessages, is 2^64 - 2^4 - 1; Huddle's packet numbers double as the ACK space, as in
    /// QUIC, so they stop at 2^62.)
    public static let rejectAfterPackets: UInt64 = 1 << 62
    /// A connection starts a new handshake after sending this many packets under one key.
    public static let rekeyAfterPackets: UInt64 = 1 << 60
    /// Packets that may fail authentication under one keypair before it accepts nothing more and is rekeyed: 2^24
    /// (TEST-MATRIX D11), far below ChaCha20-Poly1305's integrity limit of 2^36 (RFC 9001 section 6.6): a forger
    /// sending a million packets a second costs the connection one handshake every 17 s.
    public static let maxAuthenticationFailuresPerKeypair: UInt64 = 1 << 24
    /// Unreliable datagrams waiting to be sent per connection; beyond it the oldest is dropped (they are unreliable
    /// by contract, and stale ones are worth least).
    public static let maxQueuedDatagrams = 256
    /// A first handshake goes to at most this many other addresses of the peer besides the one it is dialled at
    /// (``Endpoint/connect(to:at:alternates:now:)``): eight in all, as many as a member record carries.
    public static let maxAlternateAddresses = 7
    /// Admissions (open invitations) an endpoint holds at once; ``Endpoint/addAdmission(_:credentials:)`` refuses
    /// more with ``ProtocolError/admissionLimitReached(limit:)``.
    public static let maxAdmissions = 64
    /// Peers admitted by an invitation and not yet confirmed as members (see ``Endpoint/addPeer(_:)``); further
    /// initiations under an invitation are dropped and counted until one completes or times out. Bounds what a
    /// leaked ticket can make an endpoint hold.
    public static let maxAdmittedPeers = 64
    /// How long a pending peer that proved its address (a cookie, under load) keeps its slot against one that did
    /// not, if it never completes its handshake: 5 s. An honest joiner confirms within a round trip; without this, a
    /// flood of cookie-answering initiations that never confirm held every slot until their handshakes timed out.
    public static let unconfirmedAdmissionGrace = Duration.seconds(5)
    /// Under load (more than ``EndpointConfiguration/initiationsPerSecondBeforeCookies`` initiations a second),
    /// initiations with a valid cookie one source (an IPv4 address, an IPv6 /64, a relayed peer) may take to
    /// Diffie-Hellman per second: 20, as WireGuard. Beyond it they are dropped and counted, no reply.
    public static let initiationsPerSecondPerSource = 20
    /// ... with bursts of up to 5.
    public static let initiationBurstPerSource = 5
    /// How long after completing a handshake as the initiator a side with the smaller static key (the winner of a
    /// simultaneous open) takes a new initiation from the peer for the peer's own half of that open, sent before it
    /// answered ours and arriving late by a slower path (a relay's, a TURN server's), and drops it instead of
    /// letting it supersede the connection. A peer that really started over dials again after this.
    public static let crossingInitiationWindow: Duration = .seconds(1)
    /// Sources whose rate is tracked at once: 4,096. When full, sources whose bucket has refilled are forgotten; a new
    /// source that still finds it full is refused like one over its rate.
    public static let maxRateLimitedSources = 4096
}
