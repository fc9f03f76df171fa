import HuddleCrypto
import HuddleWire

/// Something an ``Endpoint`` reports, in order per connection.
public enum EndpointEvent: Sendable, Equatable {
    /// A connection's handshake completed; messages flow.
    case connected(ConnectionID, peer: X25519PublicKey)
    /// A complete reliable message, exactly once and in order for its channel.
    case message(ConnectionID, channel: ChannelID, bytes: [UInt8])
    /// An unreliable datagram.
    case datagram(ConnectionID, channel: ChannelID, bytes: [UInt8])
    /// The peer has delivered this message and every earlier one on its channel; `tag` is the one it was sent with.
    case delivered(ConnectionID, channel: ChannelID, sequence: MessageSequence, tag: UInt64)
    /// A connection ended; `undelivered` lists every accepted message whose delivery was not confirmed.
    case closed(ConnectionID, peer: X25519PublicKey, reason: ProtocolError?, undelivered: [UndeliveredMessage])
    /// Packets to the peer of a connection now take `route`: the peer migrated (a NAT rebinding), hole punching
    /// reached it directly, or a failed direct route fell back to its relay.
    case routeChanged(ConnectionID, peer: X25519PublicKey, route: Route)
    /// Nothing has arrived from the peer of a connection since `lastHeard`, keepalives notwithstanding (see
    /// ``ConnectionEvent/unresponsive(lastHeard:)``); the connection stays open.
    case unresponsive(ConnectionID, peer: X25519PublicKey, lastHeard: Instant)
    /// A packet arrived from the peer of a connection reported ``unresponsive(_:peer:lastHeard:)``.
    case responsive(ConnectionID, peer: X25519PublicKey)
    /// Messages a driver had queued in front of the endpoint were dropped before reaching it: their connection
    /// closed, or their peer had no open connection (see ``UnsentMessages``). ``Endpoint/pollEvent()`` never returns
    /// this; drivers that queue messages insert it.
    case unsent(UnsentMessages)
    /// The allocation on TURN server `server` changed: granted, lost or failed, or a TCP fallback started or stood
    /// by again. ``Endpoint/turnAllocations`` says where each stands now.
    case turnChanged(TurnServerAddress)
    /// The port mapping on gateway `gateway` (at port 5351) changed: mapped, moved, refused, unanswered or released.
    /// ``Endpoint/portMappings`` says where each stands now.
    case portMappingChanged(NetworkAddress)
}
