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
    /// How many more joiners it lets in (`nil`: any number until it expires). A limited invitation is kept by the
    /// member that made it alone, never announced (each member would count on its own, and together let in more):
    /// its ticket names only that member, which refuses joiners once none is left (JOIN_REFUSED 2). Not on the wire.
    public var usesLeft: Int?

    /// Whether only this member holds it (a limited invitation, see ``usesLeft``).
    public var isLocal: Bool { usesLeft != nil }

    /// A grant for `secret`, valid until `expiresAt`; `requiresApproval` makes it an ask-to-join invitation, `uses`
    /// one that lets that many joiners in (`nil`: any number).
    public init(secret: SecureBytes, expiresAt: UInt64, requiresApproval: Bool = false, uses: Int? = nil) throws {
        self.secret = secret
        self.expiresAt = expiresAt
        self.requiresApproval = requiresApproval
        self.usesLeft = uses
        self.id = try SessionKeys.admissionID(invitationSecret: secret)
    }
}
