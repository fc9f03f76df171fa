import HuddleCrypto
import HuddleProtocol

/// The keys a session secret or an invitation secret stands for, derived with `crypto_kdf` under fixed contexts so
/// that one 32-byte secret can be handed around and every member derives the same handshake credentials.
///
/// - Session secret (context `hdl-sess`): sub-key 1 is the members' Noise pre-shared key, sub-key 2 the members'
///   `mac1` secret, and sub-key 3's first 8 bytes (little-endian) the identifier of the *session admission* every
///   member opens with those two, so a member it does not know yet (whose announcement it missed) can still reach it.
/// - Invitation secret (context `hdl-invt`): sub-key 1 is the joiner's pre-shared key, sub-key 2 its `mac1` secret,
///   and sub-key 3's first 8 bytes (little-endian) the invitation's public identifier (``AdmissionID``).
public enum SessionKeys {
    // Both labels are 8 ASCII bytes, the one thing Context checks, so these cannot fail.
    static let sessionContext = try! KeyDerivation.Context("hdl-sess")
    static let invitationContext = try! KeyDerivation.Context("hdl-invt")

    /// The credentials members use with each other.
    public static func memberCredentials(sessionSecret: SecureBytes, peer: X25519PublicKey) throws -> PeerCredentials {
        PeerCredentials(
            staticKey: peer,
            presharedKey: try KeyDerivation.deriveSubkey(from: sessionSecret, id: 1, context: sessionContext),
            macSecret: try KeyDerivation.deriveSubkey(from: sessionSecret, id: 2, context: sessionContext))
    }

    /// The admission every member opens with the members' credentials: an initiation from a static key the member
    /// does not know is accepted when its initiator holds the session secret (it was welcomed), and its own record,
    /// which it then sends, makes it a member here (see ``SessionMembership``).
    public static func sessionAdmission(sessionSecret: SecureBytes) throws -> (AdmissionID, AdmissionCredentials) {
        let key = try KeyDerivation.deriveSubkey(from: sessionSecret, id: 3, context: sessionContext, length: 16)
        let id = key.withUnsafeBytes { raw in
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(raw[$1]) << (8 * UInt64($1)) }
        }
        return (
            AdmissionID(id),
            AdmissionCredentials(
                presharedKey: try KeyDerivation.deriveSubkey(from: sessionSecret, id: 1, context: sessionContext),
                macSecret: try KeyDerivation.deriveSubkey(from: sessionSecret, id: 2, context: sessionContext))
        )
    }

    /// The credentials an invitation gives its holder for the members it names.
    public static func joinerCredentials(
        invitationSecret: SecureBytes, member: X25519PublicKey
    ) throws
        -> PeerCredentials
    {
        let admission = try admissionCredentials(invitationSecret: invitationSecret)
        return PeerCredentials(
            staticKey: member, presharedKey: admission.presharedKey, macSecret: admission.macSecret)
    }

    /// The admission a member opens for an invitation.
    public static func admissionCredentials(invitationSecret: SecureBytes) throws -> AdmissionCredentials {
        AdmissionCredentials(
            presharedKey: try KeyDerivation.deriveSubkey(from: invitationSecret, id: 1, context: invitationContext),
            macSecret: try KeyDerivation.deriveSubkey(from: invitationSecret, id: 2, context: invitationContext))
    }

    /// The invitation's public identifier.
    public static func admissionID(invitationSecret: SecureBytes) throws -> AdmissionID {
        let key = try KeyDerivation.deriveSubkey(from: invitationSecret, id: 3, context: invitationContext, length: 16)
        let value = key.withUnsafeBytes { raw in
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(raw[$1]) << (8 * UInt64($1)) }
        }
        return AdmissionID(value)
    }
}
