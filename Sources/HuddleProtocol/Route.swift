import HuddleCrypto

/// Where packets to a peer go: straight to its UDP address, or through a relay that forwards them to the peer's
/// registration there (docs/PROTOCOL.md 7.12 and 10).
public enum Route: Hashable, Sendable, CustomStringConvertible {
    /// Straight to the peer's UDP address.
    case direct(NetworkAddress)
    /// Through the relay at `via`, wrapped in a RELAY_SEND envelope naming `peer`'s static key.
    case relayed(via: NetworkAddress, peer: X25519PublicKey)
    /// Through this node's allocation on the TURN server at `server` (over UDP or TCP), to and from the peer's UDP
    /// address `peer` (RFC 8656): ChannelData once the server confirmed a channel, a Send indication before. The
    /// peer sees this node at the allocation's relayed address. Indirect: two addresses inline would make every `Route` (returned with
    /// each packet a connection sends, compared with each it receives) half as large again, for a rare route.
    indirect case turn(server: TurnServerAddress, peer: NetworkAddress)

    /// Whether packets on this route pass through a relay (a Huddle relay or a TURN server).
    public var isRelayed: Bool {
        if case .direct = self { return false }
        return true
    }

    /// The address packets on this route are sent to: the peer's, or the relay's (a TURN server's may be a TCP
    /// address).
    public var udpDestination: NetworkAddress {
        switch self {
        case .direct(let address): return address
        case .relayed(let relay, _): return relay
        case .turn(let server, _): return server.address
        }
    }

    /// Whether `other` is another network path than this one: a relay on either side, or another IP address. Only
    /// the port differing (a NAT rebinding) is the same path: what was learned about it (congestion state, the path
    /// MTU) still holds.
    func isAnotherPath(than other: Route) -> Bool {
        guard case .direct(let mine) = self, case .direct(let theirs) = other else { return true }
        return mine.addressBytes != theirs.addressBytes
    }

    /// The bytes a cookie binds to: the address, for a relayed route also the peer key the relay vouched for, and for
    /// a TURN route the server and the peer's address.
    var canonicalBytes: [UInt8] {
        switch self {
        case .direct(let address): return address.canonicalBytes
        case .relayed(let relay, let peer): return relay.canonicalBytes + peer.bytes
        case .turn(let server, let peer): return server.canonicalBytes + peer.canonicalBytes
        }
    }

    public var description: String {
        switch self {
        case .direct(let address): return address.description
        case .relayed(let relay, _): return "relay \(relay)"
        case .turn(let server, let peer): return "\(peer) via TURN \(server)"
        }
    }
}
