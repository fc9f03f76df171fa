/// Every bound the protocol core enforces, by name. Each has a test at the limit.
public enum ProtocolLimits {
    /// Packet numbers at or above this are never sent or accepted under one key (WireGuard's RejectAfterMessages:
    /// 2^64 - 2^4 - 1). A connection rekeys long before, at ``rekeyAfterPackets``.
    public static let rejectAfterPackets: UInt64 = UInt64.max - (1 << 4)
    /// A connection starts a new handshake after sending this many packets under one key.
    public static let rekeyAfterPackets: UInt64 = 1 << 60
}
