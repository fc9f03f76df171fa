import HuddleCrypto
import HuddleProtocol

/// One member of a session as every member knows it: its public identity (signing key, Noise static key and the
/// signature binding them), a display name, where it can be reached, and the join epoch that tells its joins apart.
public struct MemberRecord: Hashable, Sendable {
    /// Who the member is.
    public var identity: PublicIdentity
    /// A display name of at most ``ProtocolLimits/maxMemberNameBytes`` UTF-8 bytes.
    public var name: String
    /// Addresses the member can be reached at, at most ``ProtocolLimits/maxMemberAddresses``.
    public var addresses: [NetworkAddress]
    /// The session's logical clock when this member joined; a later join of the same identity has a larger epoch,
    /// and a departure names the epoch it ends.
    public var epoch: UInt64

    /// A member record.
    public init(identity: PublicIdentity, name: String, addresses: [NetworkAddress], epoch: UInt64) {
        self.identity = identity
        self.name = name
        self.addresses = addresses
        self.epoch = epoch
    }

    /// The member's Noise static key, which names its connection.
    public var staticKey: X25519PublicKey { identity.agreementKey }
}
