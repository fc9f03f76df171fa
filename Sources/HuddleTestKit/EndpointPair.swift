import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Endpoints wired together by hand, so handshake and session tests can hold, drop, replay and count single datagrams.
public enum EndpointPair {
    /// The prologue every endpoint of these tests shares.
    public static let prologue = Array("huddle/1 endpoint tests".utf8)

    /// A fresh endpoint with its own identity, knowing no peers, its connections configured as `connection` says,
    /// speaking the protocol revision `prologue` (``prologue`` unless a test plays another revision).
    public static func endpoint(
        seed: UInt64, connection: ConnectionConfiguration = ConnectionConfiguration(), prologue: [UInt8] = prologue
    ) -> Endpoint {
        var random = ChaChaRandomGenerator(seed: seed)
        let identity = Identity(using: &random)
        var configuration = EndpointConfiguration(
            identity: identity, prologue: prologue,
            wallClockAtOrigin: TAI64N(seconds: 1_700_000_000 + seed, nanoseconds: 0))
        configuration.connection = connection
        return Endpoint(configuration: configuration, generator: ChaChaRandomGenerator(seed: seed &+ 1000))
    }

    /// 32 bytes derived from `label`.
    public static func secret(_ label: UInt64) -> SecureBytes {
        var random = ChaChaRandomGenerator(seed: 0x5EC2E7 &+ label)
        return SecureBytes(count: 32, using: &random)
    }

    /// The address of endpoint `index` (10.0.0.`index`:4000).
    public static func address(_ index: UInt8) -> NetworkAddress { NetworkAddress(ipv4: 10, 0, 0, index, port: 4000) }

    /// The credentials the endpoints of ``connected(_:)`` know each other by: `key`, with the shared secrets 1 (the
    /// preshared key) and 2 (the `mac1` secret).
    public static func credentials(for key: X25519PublicKey) -> PeerCredentials {
        PeerCredentials(staticKey: key, presharedKey: secret(1), macSecret: secret(2))
    }

    /// `a` (seed 1, at address 1, its connections configured as `connection` says) and `b` (seed 2, at address 2),
    /// each knowing the other (``credentials(for:)``), `a` connected to `b` and the handshake completed at time zero.
    /// The events of the handshake are left to read.
    public static func connected(
        _ connection: ConnectionConfiguration = ConnectionConfiguration()
    ) throws -> (a: Endpoint, b: Endpoint) {
        var a = endpoint(seed: 1, connection: connection)
        var b = endpoint(seed: 2)
        try a.addPeer(credentials(for: b.staticKey))
        try b.addPeer(credentials(for: a.staticKey))
        try a.connect(to: b.staticKey, at: address(2), now: .zero)
        exchange(&a, &b, now: .zero)
        return (a, b)
    }

    /// Every datagram `endpoint` wants to send now.
    public static func drain(_ endpoint: inout Endpoint, now: Instant) -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        while let (_, datagram) = endpoint.pollTransmit(now: now) { datagrams.append(datagram) }
        return datagrams
    }

    /// Hands `datagrams` to `endpoint` as if they came from address `source`, at `now`.
    public static func deliver(_ datagrams: [[UInt8]], to endpoint: inout Endpoint, from source: UInt8, now: Instant) {
        for datagram in datagrams { endpoint.handle(datagram: datagram, from: address(source), now: now) }
    }

    /// Delivers datagrams back and forth between `a` (at address 1) and `b` (at address 2) until neither has
    /// anything to send; returns how many datagrams each side sent.
    @discardableResult
    public static func exchange(_ a: inout Endpoint, _ b: inout Endpoint, now: Instant) -> (fromA: Int, fromB: Int) {
        var counts = (fromA: 0, fromB: 0)
        while true {
            let fromA = drain(&a, now: now)
            let fromB = drain(&b, now: now)
            if fromA.isEmpty && fromB.isEmpty { return counts }
            counts.fromA += fromA.count
            counts.fromB += fromB.count
            for datagram in fromA { b.handle(datagram: datagram, from: address(1), now: now) }
            for datagram in fromB { a.handle(datagram: datagram, from: address(2), now: now) }
        }
    }

    /// Every event `endpoint` has.
    public static func events(_ endpoint: inout Endpoint) -> [EndpointEvent] {
        var events: [EndpointEvent] = []
        while let event = endpoint.pollEvent() { events.append(event) }
        return events
    }
}
