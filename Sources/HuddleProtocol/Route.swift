import HuddleCrypto

/// Where packets to a peer go: straight to its UDP address, or through a relay that forwards them to the peer's
/// registration there (docs/PROTOCOL.md 7.12 and 10).
public enum Route: Hashable, Sendable, CustomStringConvertible {
    /// Straight to the peer's UDP address.
    case direct(NetworkAddress)
    /// Through the relay at `via`, wrapped in a RELAY_SEND envelope naming `peer`'s static key.
    case relayed(via: NetworkAddress, peer: X25519PublicKey)

    /// Whether packets on this route pass through a relay.
    public var isRelayed: Bool {
        if case .relayed = self { return true }
        return false
    }

    /// The UDP address datagrams on this route are sent to: the peer's, or the relay's.
    public var udpDestination: NetworkAddress {
        switch self {
        case .direct(let address): return address
        case .relayed(let relay, _): return relay
        }
    }

    /// Whether `other` is another network path than this one: a relay on either side, or another IP address. Only
    /// the port differing (a NAT rebinding) is the same path: what was learned about it (congestion state, the path
    /// MTU) still holds.
    func isAnotherPath(than other: Route) -> Bool {
        guard case .direct(let mine) = self, case .direct(let theirs) = other else { return true }
        return mine.addressBytes != theirs.addressBytes
    }

    /// The bytes a cookie binds to: the address, and for a relayed route also the peer key the relay vouched for.
    var canonicalBytes: [UInt8] {
        switch self {
        case .direct(let address): return address.canonicalBytes
        case .relayed(let relay, let peer): return relay.canonicalBytes + peer.bytes
        }
    }

    public var description: String {
        switch self {
        case .direct(let address): return address.description
        case .relayed(let relay, _): return "relay \(relay)"
        }
    }
}
