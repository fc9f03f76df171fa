import HuddleCrypto
import HuddleProtocol

/// Which peers of a session the local node can talk to right now, as one member sees it: the peers whose connection
/// completed its handshake, where their packets come from, and the members that became unreachable.
///
/// A sub-machine of ``SessionMembership``, which feeds it the endpoint's connection events and decides, with the
/// ``Roster``, who is a member. Guarantees:
/// - A connection is counted once: ``disconnect(_:)`` reports a close only for a peer that was connected, so a
///   repeated or stale close changes nothing.
/// - Losing a member and getting it back are transitions: ``markUnreachable(_:)`` and ``markReachable(_:)`` say
///   whether the state changed, so each loss and each return is reported once however often it is observed.
/// - Connected and unreachable are independent: a member can be connected again while still marked unreachable until
///   the membership takes it back, and a failed attempt to reach a connected member does not make it unreachable
///   (the membership checks ``isConnected(_:)`` first).
struct Reachability: Sendable {
    /// Peers whose connection completed its handshake and has not closed.
    private(set) var connected: Set<X25519PublicKey> = []
    /// Members whose connection closed or could not be established and that have not come back.
    private(set) var unreachable: Set<X25519PublicKey> = []
    /// Where each peer's packets came from on its latest connection (kept after it closes: it is the best address
    /// a joiner's record can carry for it).
    private var observedAddresses: [X25519PublicKey: NetworkAddress] = [:]

    /// Peers a connection to which ever completed its handshake (kept after it closes, as the observed addresses).
    private(set) var everConnected: Set<X25519PublicKey> = []

    /// Whether the connection to `key` is up.
    func isConnected(_ key: X25519PublicKey) -> Bool { connected.contains(key) }

    /// Whether `key` is marked unreachable.
    func isUnreachable(_ key: X25519PublicKey) -> Bool { unreachable.contains(key) }

    /// Where `key`'s packets came from on its latest connection, if the endpoint said.
    func observedAddress(of key: X25519PublicKey) -> NetworkAddress? { observedAddresses[key] }

    /// A connection to `key` completed its handshake, its packets coming from `address` (`nil`: not known, which
    /// also drops an address observed on an earlier connection, as that one may be stale).
    mutating func connect(_ key: X25519PublicKey, address: NetworkAddress?) {
        connected.insert(key)
        everConnected.insert(key)
        observedAddresses[key] = address
    }

    /// The connection to `key` closed; returns whether it was up (`false`: nothing changes).
    mutating func disconnect(_ key: X25519PublicKey) -> Bool {
        connected.remove(key) != nil
    }

    /// Marks `key` unreachable; returns whether it was reachable until now (the loss to report).
    mutating func markUnreachable(_ key: X25519PublicKey) -> Bool {
        unreachable.insert(key).inserted
    }

    /// Stops counting `key` as unreachable (it reconnected, joined again, or departed and is no longer waited for);
    /// returns whether it was unreachable.
    @discardableResult
    mutating func markReachable(_ key: X25519PublicKey) -> Bool {
        unreachable.remove(key) != nil
    }
}
