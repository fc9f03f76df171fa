import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire

/// Builds simulated sessions: nodes with seeded identities that know nobody, a founder, invitations, joiners.
public struct TestSession {
    /// The seed everything derives from.
    public let seed: UInt64
    /// The session (its id derives from ``charter``).
    public let session: SessionID
    /// The session's charter: node 0 is its creator, and only it may remove members.
    public let charter: SessionCharter
    /// Identities of the nodes, by index.
    public let identities: [Identity]
    private var random: ChaChaRandomGenerator

    /// A session of `count` prospective members.
    public init(count: Int, seed: UInt64) {
        self.seed = seed
        var random = ChaChaRandomGenerator(seed: seed ^ 0x5E55_1014)
        identities = (0..<count).map { _ in Identity(using: &random) }
        charter = SessionCharter(
            signingKey: identities[0].signingKey, nonce: random.bytes(count: SessionCharter.nonceLength),
            policy: .creatorOnly)
        session = charter.session
        self.random = random
    }

    /// One ``MemberNode`` per identity, each with an endpoint that knows no peers and an empty chunk store (taking
    /// `storeLatency` per store action, see ``MemberNode/init(endpoint:store:storeLatency:timing:)``), its machine's
    /// waits set by `timing`.
    public func nodes(
        configuration: ConnectionConfiguration = ConnectionConfiguration(), storeLatency: Duration? = nil,
        timing: SessionTiming = SessionTiming()
    ) -> [MemberNode] {
        identities.indices.map {
            MemberNode(
                endpoint: endpoint($0, configuration: configuration), storeLatency: storeLatency, timing: timing)
        }
    }

    /// A fresh endpoint for node `index` (a restarted node gets one too: same identity, new state). `incarnation`
    /// varies the random stream so a restarted endpoint does not repeat its predecessor's ephemeral keys.
    public func endpoint(
        _ index: Int, configuration: ConnectionConfiguration = ConnectionConfiguration(), incarnation: UInt64 = 0
    ) -> Endpoint {
        var endpointConfiguration = EndpointConfiguration(
            identity: identities[index], prologue: TestMesh.prologue,
            wallClockAtOrigin: TAI64N(seconds: 1_700_000_000 + UInt64(index), nanoseconds: 0))
        endpointConfiguration.connection = SimulationSettings.applied(to: configuration)
        return Endpoint(
            configuration: endpointConfiguration,
            generator: ChaChaRandomGenerator(seed: seed &* 131 &+ UInt64(index) &+ incarnation &* 0x9E37_79B9))
    }

    /// The member record of node `index`, reachable at `address`.
    public func record(_ index: Int, address: NetworkAddress) -> MemberRecord {
        MemberRecord(
            identity: identities[index].publicIdentity, name: "node \(index)", addresses: [address], epoch: 0)
    }

    /// The founder's membership (with the charter when node `index` is its creator, node 0).
    public mutating func founding(_ index: Int, address: NetworkAddress) -> SessionMembership {
        SessionMembership(
            starting: session, local: record(index, address: address),
            sessionSecret: SecureBytes(count: 32, using: &random), charter: index == 0 ? charter : nil)
    }

    /// The removal of node `index`, signed by node `author` (the charter lets only node 0 remove).
    public func removal(of index: Int, by author: Int = 0) -> MemberRemoval {
        MemberRemoval(
            session: session, removing: identities[index].signingKey.publicKey,
            signingKey: identities[author].signingKey)
    }

    /// A fresh invitation, valid until `expiresAt` (seconds since 1970).
    public mutating func invitation(expiresAt: UInt64 = .max) -> InvitationGrant {
        // A 32-byte secret cannot make the derivation fail.
        try! InvitationGrant(secret: SecureBytes(count: 32, using: &random), expiresAt: expiresAt)
    }

    /// Node `index` joining with `grant`, reaching the members named by `hints`.
    public func joining(
        _ index: Int, address: NetworkAddress, grant: InvitationGrant,
        hints: [(staticKey: X25519PublicKey, addresses: [NetworkAddress])]
    ) -> SessionMembership {
        // Derivations from a 32-byte secret cannot fail.
        try! SessionMembership(
            joining: session, local: record(index, address: address), invitationSecret: grant.secret, members: hints)
    }

    /// The Noise static key of node `index`.
    public func staticKey(_ index: Int) -> X25519PublicKey { identities[index].agreementKey.publicKey }
}
