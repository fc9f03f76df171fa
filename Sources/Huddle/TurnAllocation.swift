/// One TURN server a node allocates on (``HuddleNode/Configuration/turnServers``) and where its allocation stands.
public struct TurnAllocation: Sendable, Hashable {
    /// The server's UDP address.
    public let server: NetworkAddress
    /// The relayed address the server granted: peers reach this node there. `nil` until granted, and after the
    /// allocation failed or lapsed (the node retries by itself).
    public let relayedAddress: NetworkAddress?
    /// Why the latest attempt failed (wrong credentials, a refusal, no answer), until one succeeds.
    public let failure: TurnFailure?
}
