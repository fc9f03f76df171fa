import HuddleCrypto
import HuddleWire

/// A stream of reliable messages one node sends to one peer on one channel, with sizes fixed in advance, queued
/// as fast as the endpoint accepts them (backpressure: a full queue just waits).
public struct Workload: Sendable {
    /// The receiving peer.
    public var peer: X25519PublicKey
    /// The channel.
    public var channel: ChannelID
    /// The size of each message, in order.
    public var sizes: [Int]
    /// How many have been accepted by the endpoint so far.
    public internal(set) var accepted = 0

    /// A workload of messages with `sizes` to `peer` on `channel`.
    public init(peer: X25519PublicKey, channel: ChannelID, sizes: [Int]) {
        self.peer = peer
        self.channel = channel
        self.sizes = sizes
    }

    /// Total bytes of all messages.
    public var totalBytes: Int { sizes.reduce(0, +) }

    /// Whether every message was accepted.
    public var isFullyAccepted: Bool { accepted == sizes.count }
}
