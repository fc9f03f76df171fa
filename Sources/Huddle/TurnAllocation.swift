import HuddleProtocol

/// One TURN server a node allocates on (``HuddleNode/Configuration/turnServers``) and where its allocation stands.
public struct TurnAllocation: Sendable, Hashable {
    /// The server's address.
    public let server: NetworkAddress
    /// How this node reaches the server: UDP, or TCP (given as such, or as the fallback for UDP).
    public let transport: TurnTransport
    /// Whether this is a TCP fallback standing by while a UDP allocation works (see `TurnServer`).
    public let isStandingBy: Bool
    /// The relayed address the server granted: peers reach this node there. `nil` until granted, and after the
    /// allocation failed or lapsed (the node retries by itself).
    public let relayedAddress: NetworkAddress?
    /// Why the latest attempt failed (wrong credentials, a refusal, no answer), until one succeeds.
    public let failure: TurnFailure?

    /// Whether some of `allocations` may still change soon: neither granted nor failed, and not a TCP fallback
    /// standing by, nor a UDP server that has not answered while a TCP one granted an allocation (UDP is blocked).
    static func areUnsettled(_ allocations: [TurnAllocation]) -> Bool {
        let overTCP = allocations.contains { $0.transport == .tcp && $0.relayedAddress != nil }
        return allocations.contains {
            $0.relayedAddress == nil && $0.failure == nil && !$0.isStandingBy && !($0.transport == .udp && overTCP)
        }
    }

    /// Every allocation of `endpoint`, as it stands.
    static func all(of endpoint: Endpoint) -> [TurnAllocation] {
        endpoint.turnAllocations.map {
            TurnAllocation(
                server: $0.server.address, transport: $0.server.transport, isStandingBy: $0.isStandingBy,
                relayedAddress: $0.relayed, failure: $0.failure)
        }
    }
}
