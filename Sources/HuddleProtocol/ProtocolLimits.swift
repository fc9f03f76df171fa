/// Every bound the protocol core enforces, by name. Each has a test at the limit.
public enum ProtocolLimits {
    /// Packet numbers at or above this are never sent or accepted under one key: 2^62, the first number an ACK
    /// frame's varints cannot express. A connection rekeys long before, at ``rekeyAfterPackets``. (WireGuard's
    /// equivalent, RejectAfterMessages, is 2^64 - 2^4 - 1; Huddle's packet numbers double as the ACK space, as in
    /// QUIC, so they stop at 2^62.)
    public static let rejectAfterPackets: UInt64 = 1 << 62
    /// A connection starts a new handshake after sending this many packets under one key.
    public static let rekeyAfterPackets: UInt64 = 1 << 60
    /// Unreliable datagrams waiting to be sent per connection; beyond it the oldest is dropped (they are unreliable
    /// by contract, and stale ones are worth least).
    public static let maxQueuedDatagrams = 256
    /// Admissions (open invitations) an endpoint holds at once; ``Endpoint/addAdmission(_:credentials:)`` refuses
    /// more with ``ProtocolError/admissionLimitReached(limit:)``.
    public static let maxAdmissions = 64
    /// Peers admitted by an invitation and not yet confirmed as members (see ``Endpoint/addPeer(_:)``); further
    /// initiations under an invitation are dropped and counted until one completes or times out. Bounds what a
    /// leaked ticket can make an endpoint hold.
    public static let maxAdmittedPeers = 64
}
