import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// Control messages on channel 1 (docs/PROTOCOL.md 8.2), all eleven types and the member records inside them:
/// anything that decodes re-encodes to bytes that decode to the same encoding.
public enum MembershipTarget: FuzzTarget {
    public static let name = "membership"

    public static func run(_ input: UnsafeRawBufferPointer) {
        guard let message = try? MembershipMessage(decoding: Array(input)) else { return }
        let encoded = message.encoded()
        guard let again = try? MembershipMessage(decoding: encoded) else {
            preconditionFailure("a decoded control message does not decode after re-encoding")
        }
        precondition(again.encoded() == encoded, "a control message does not round-trip")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var random = ChaChaRandomGenerator(seed: 1)
        let identity = Identity(using: &random)
        let record = MemberRecord(
            identity: identity.publicIdentity, name: "ada",
            addresses: [NetworkAddress(ipv4: 192, 0, 2, 1, port: 7000)], epoch: 3)
        let grant = try InvitationGrant(secret: SecureBytes(count: 32, using: &random), expiresAt: 1_900_000_000)
        let messages: [(String, MembershipMessage)] = [
            ("member-joined", .memberJoined(record)),
            ("member-left", .memberLeft(signingKey: identity.publicIdentity.signingKey, epoch: 3)),
            (
                "activity",
                .activity(
                    ActivityRecord(
                        clock: 2, author: identity.publicIdentity.signingKey, payload: Array("{\"topic\":\"t\"}".utf8)))
            ),
            ("invitation-opened", .invitationOpened(grant)),
            ("session-ended", .sessionEnded(by: identity.publicIdentity.signingKey)),
            (
                "charter",
                .charter(
                    SessionCharter(
                        signingKey: identity.signingKey, nonce: random.bytes(count: SessionCharter.nonceLength),
                        policy: .creatorOnly))
            ),
            (
                "member-removed",
                .memberRemoved(
                    MemberRemoval(
                        session: SessionID(bytes: [UInt8](repeating: 7, count: SessionID.length))!,
                        removing: identity.publicIdentity.signingKey, signingKey: identity.signingKey))
            ),
            (
                "admission-key",
                .admissionKey(
                    AdmissionKey(
                        epoch: 2, author: identity.publicIdentity.signingKey,
                        secret: SecureBytes(count: 32, using: &random)))
            ),
            ("invitations-revoked", .invitationsRevoked([grant.id, AdmissionID(7)])),
        ]
        return messages.map { ($0.0, $0.1.encoded()) }
    }
}
