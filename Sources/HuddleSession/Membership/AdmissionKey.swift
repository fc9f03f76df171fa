import HuddleCrypto
import HuddleProtocol

/// The secret the session admission is keyed by, at one epoch (PROTOCOL.md §8.2, ADMISSION_KEY). Epoch 0 is the
/// session secret itself; every departure starts a new epoch with a fresh secret, sent only to the members that
/// remain, so a member that left or was removed cannot pass the session admission again.
///
/// Concurrent rotations converge: of two keys the later one is the one with the larger epoch, or of equal epochs the
/// one whose author's signing key is larger (bytewise).
public struct AdmissionKey: Sendable {
    /// The epoch: 0 for the session secret, then one more per rotation.
    public let epoch: UInt64
    /// The signing key of the member who drew the secret (the tie-break between concurrent rotations).
    public let author: Ed25519PublicKey
    /// The 32-byte secret the admission's credentials derive from (as a session secret's, §8.1).
    public let secret: SecureBytes

    /// An admission key.
    public init(epoch: UInt64, author: Ed25519PublicKey, secret: SecureBytes) {
        self.epoch = epoch
        self.author = author
        self.secret = secret
    }

    /// The admission id the secret derives (§8.1, sub-key 3): public, so comparing it leaks nothing of the secret.
    public var admissionID: AdmissionID? { try? SessionKeys.sessionAdmission(sessionSecret: secret).0 }

    /// Whether this key supersedes `other`: a larger epoch; of equal epochs, a larger author key (bytewise); of equal
    /// authors too (an author that restarted and drew a key for an epoch it had drawn before), a larger admission id.
    /// The order is total, so every member ends on the same key whatever order keys arrive in.
    public func supersedes(_ other: AdmissionKey) -> Bool {
        if epoch != other.epoch { return epoch > other.epoch }
        if author != other.author { return other.author.bytes.lexicographicallyPrecedes(author.bytes) }
        return (admissionID?.rawValue ?? 0) > (other.admissionID?.rawValue ?? 0)
    }
}
