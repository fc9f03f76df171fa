import HuddleCrypto
import HuddleProtocol

/// An open invitation as members share it: its secret (from which joiners' credentials derive) and when it stops
/// being accepted (seconds since 1970, UTC).
public struct InvitationGrant: Sendable {
    /// The 32-byte invitation secret.
    public var secret: SecureBytes
    /// Expiry, in seconds since 1970 (UTC).
    public var expiresAt: UInt64
    /// The invitation's public identifier, derived from the secret.
    public let id: AdmissionID

    /// A grant for `secret`, valid until `expiresAt`.
    public init(secret: SecureBytes, expiresAt: UInt64) throws {
        self.secret = secret
        self.expiresAt = expiresAt
        self.id = try SessionKeys.admissionID(invitationSecret: secret)
    }
}
