/// One relay a node registers with (``HuddleNode/Configuration/relays``, or one a ticket named when joining) and
/// whether the relay has confirmed the registration (it then forwards for this node, and told it its reflexive
/// address).
public struct RelayRegistration: Sendable, Hashable {
    /// The relay's UDP address.
    public let relay: NetworkAddress
    /// Whether the relay confirmed this node's registration and it has not lapsed.
    public let isRegistered: Bool
}
