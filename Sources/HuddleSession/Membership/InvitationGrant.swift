import HuddleCrypto
import HuddleProtocol

/// An open invitation as members share it: its secret (from which joiners' credentials derive), when it stops
/// being accepted (seconds since 1970, UTC), and whether a member must admit each joiner.
public struct InvitationGrant: Sendable {
    /// The 32-byte invitation secret.
    public var secret: SecureBytes
    /// Expiry, in seconds since 1970 (UTC).
    public var expiresAt: UInt64
    /// The invitation's public identifier, derived from the secret.
    public let id: AdmissionID
    /// Whether a joiner under it waits until a member admits it (ask to join), rather than being let in at once.
    public var requiresApproval: Bool

    /// A grant for `secret`, valid until `expiresAt`; `requiresApproval` makes it an ask-to-join invitation.
    public init(secret: SecureBytes, expiresAt: UInt64, requiresApproval: Bool = false) throws {
        self.secret = secret
        self.expiresAt = expiresAt
        self.requiresApproval = requiresApproval
        self.id = try SessionKeys.admissionID(invitationSecret: secret)
    }
}
