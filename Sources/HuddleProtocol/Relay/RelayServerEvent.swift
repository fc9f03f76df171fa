import HuddleCrypto

/// A change in who is registered at a ``RelayServer``, for its operator (``RelayServer/pollEvent()``).
///
/// Refreshes of a registration at the same address are not events: a client refreshes every few seconds.
public enum RelayServerEvent: Sendable, Hashable {
    /// Why a registration ended.
    public enum EndReason: String, Sendable, Hashable {
        /// Not refreshed within ``ProtocolLimits/relayServerRegistrationLifetime``.
        case expired
        /// Another client registered from the same address (one registration per address).
        case displaced
        /// The relay stopped admitting the key (``RelayServer/admit(only:)``): a member relay's member left.
        case notAdmitted
    }

    /// `key` proved it holds its static key and registered from `address`, for the first time or from a new address.
    case registered(X25519PublicKey, address: NetworkAddress)
    /// `key`'s registration ended.
    case unregistered(X25519PublicKey, reason: EndReason)
}
