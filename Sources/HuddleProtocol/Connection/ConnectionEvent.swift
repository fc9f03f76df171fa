import HuddleWire

/// Something a connection reports to its owner, in order.
public enum ConnectionEvent: Sendable, Equatable {
    /// The handshake completed and keys are confirmed: messages flow.
    case established
    /// A complete reliable message, in order for its channel, exactly once.
    case message(channel: ChannelID, bytes: [UInt8])
    /// An unreliable datagram.
    case datagram(channel: ChannelID, bytes: [UInt8])
    /// The peer has delivered this message and every earlier one on its channel; `tag` is the one it was sent with.
    case delivered(channel: ChannelID, sequence: MessageSequence, tag: UInt64)
    /// The connection closed. `reason` is `nil` for a local, orderly close. `undelivered` lists every accepted
    /// message the peer did not acknowledge: none is ever lost silently.
    case closed(reason: ProtocolError?, undelivered: [UndeliveredMessage])
    /// Packets to the peer now take `route` (the peer migrated, hole punching reached it directly, or a direct
    /// route failed and the connection went back to the relay or its previous route).
    case routeChanged(Route)
    /// The peer reports seeing this side at `address` (OBSERVED_ADDRESS): a reflexive address.
    case observedAddress(NetworkAddress)
    /// Nothing authenticated has arrived from the peer since `lastHeard`, ``ConnectionConfiguration/unresponsiveAfter``
    /// ago, keepalives notwithstanding: it may have crashed or lost its network. The connection stays open (it
    /// closes with ``ProtocolError/idleTimeout`` only after ``ConnectionConfiguration/idleTimeout``); reported once
    /// until ``responsive``.
    case unresponsive(lastHeard: Instant)
    /// An authenticated packet arrived from a peer reported ``unresponsive(lastHeard:)``.
    case responsive
}

/// An accepted message whose delivery could not be confirmed before its connection closed.
public struct UndeliveredMessage: Sendable, Hashable {
    /// Its channel.
    public var channel: ChannelID
    /// Its sequence number on that channel.
    public var sequence: MessageSequence
    /// The tag it was sent with (``Connection/send(_:on:tag:)``; 0 when it has none).
    public var tag: UInt64

    /// A record of an undelivered message.
    public init(channel: ChannelID, sequence: MessageSequence, tag: UInt64 = 0) {
        self.channel = channel
        self.sequence = sequence
        self.tag = tag
    }
}
