import HuddleCrypto
import HuddleWire

/// Reliable messages that an application handed to a queue in front of an ``Endpoint`` (the outbound queue of
/// HuddleTransport's driver) and that never reached the endpoint, because their connection closed, or their peer had
/// no open connection, before the queue was drained. They were never sequenced or sent.
///
/// The endpoint itself never produces this report: a driver that queues messages in front of it inserts it into the
/// event stream as ``EndpointEvent/unsent(_:)``, next to the ``EndpointEvent/closed(_:peer:reason:undelivered:)``
/// report of messages the endpoint accepted, so that no accepted message is lost silently.
public struct UnsentMessages: Sendable, Hashable {
    /// The connection the messages were addressed to, if they were addressed by connection.
    public var connection: ConnectionID?
    /// The peer they were for, if known (always known when they were addressed by peer).
    public var peer: X25519PublicKey?
    /// Their channel.
    public var channel: ChannelID
    /// How many messages.
    public var count: Int
    /// Their bytes in all.
    public var bytes: Int
    /// Their tags (0 for a message sent without one), in the order they were queued.
    public var tags: [UInt64]

    /// A report of `count` unsent messages of `bytes` bytes on `channel`.
    public init(
        connection: ConnectionID?, peer: X25519PublicKey?, channel: ChannelID, count: Int, bytes: Int,
        tags: [UInt64] = []
    ) {
        self.tags = tags
        self.connection = connection
        self.peer = peer
        self.channel = channel
        self.count = count
        self.bytes = bytes
    }
}
