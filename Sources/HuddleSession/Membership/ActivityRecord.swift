import HuddleCrypto
import HuddleProtocol

/// The session's shared activity, as a last-writer-wins register: the value with the larger (clock, author) pair
/// wins everywhere, so concurrent changes converge on the same value on every member.
public struct ActivityRecord: Hashable, Sendable {
    /// The logical clock of the change.
    public var clock: UInt64
    /// The member who made it (its signing key).
    public var author: Ed25519PublicKey
    /// The encoded activity (at most ``ProtocolLimits/maxActivityBytes``).
    public var payload: [UInt8]

    /// An activity value.
    public init(clock: UInt64, author: Ed25519PublicKey, payload: [UInt8]) {
        self.clock = clock
        self.author = author
        self.payload = payload
    }

    /// Whether this change wins over `other`: a larger clock, or the same clock and a larger author key (bytewise).
    public func supersedes(_ other: ActivityRecord) -> Bool {
        if clock != other.clock { return clock > other.clock }
        return other.author.bytes.lexicographicallyPrecedes(author.bytes)
    }
}
