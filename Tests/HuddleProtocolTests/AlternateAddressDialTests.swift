import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// A peer dialled at several addresses (issue 39, item 2): the first at once, the others from the first retry, and
/// the connection lives where the first answer came from.
@Suite("Dialling a peer's other addresses")
struct AlternateAddressDialTests {
    /// `a` and `b` knowing each other, nothing connected.
    static func pair() throws -> (a: Endpoint, b: Endpoint) {
        var a = EndpointPair.endpoint(seed: 1)
        var b = EndpointPair.endpoint(seed: 2)
        try a.addPeer(EndpointPair.credentials(for: b.staticKey))
        try b.addPeer(EndpointPair.credentials(for: a.staticKey))
        return (a, b)
    }

    /// Everything `endpoint` sends at `now`, with destinations.
    static func transmits(_ endpoint: inout Endpoint, now: Instant) -> [(NetworkAddress, [UInt8])] {
        var sent: [(NetworkAddress, [UInt8])] = []
        while let (destination, datagram) = endpoint.pollTransmit(now: now) { sent.append((destination, datagram)) }
        return sent
    }

    /// When `a` first retries its initiation and what it sends then (due within the initial retry interval plus its
    /// jitter, so within a second).
    static func firstRetry(_ a: inout Endpoint) -> (Instant, [(NetworkAddress, [UInt8])]) {
        var now = Instant.zero
        var retry: [(NetworkAddress, [UInt8])] = []
        while retry.isEmpty, now < .zero + .seconds(1) {
            now = now + .milliseconds(10)
            a.handleTimeout(now: now)
            retry = Self.transmits(&a, now: now)
        }
        return (now, retry)
    }

    static let unreachable = NetworkAddress(ipv4: 10, 0, 0, 99, port: 4000)

    @Test("The first attempt goes to the first address only; the retry to every address; the answer decides the route")
    func retryTriesEveryAddress() throws {
        var (a, b) = try Self.pair()
        let id = try a.connect(
            to: b.staticKey, at: Self.unreachable, alternates: [EndpointPair.address(2)], now: .zero)
        let first = Self.transmits(&a, now: .zero)
        #expect(first.map(\.0) == [Self.unreachable], "Happy Eyeballs: the others wait for the first retry")
        let (now, retry) = Self.firstRetry(&a)
        #expect(Set(retry.map(\.0)) == [Self.unreachable, EndpointPair.address(2)])
        #expect(now >= .zero + .milliseconds(250))
        // b answers the copy that reached it; a's connection now lives at b's second address.
        for (destination, datagram) in retry where destination == EndpointPair.address(2) {
            b.handle(datagram: datagram, from: EndpointPair.address(1), now: now)
        }
        EndpointPair.exchange(&a, &b, now: now)
        #expect(a.connection(id)?.state == .established)
        #expect(a.connection(id)?.route == .direct(EndpointPair.address(2)))
    }

    @Test("At the limit: seven other addresses are tried, an eighth and the dialled one again are not")
    func alternatesAreBounded() throws {
        let (dialler, b) = try Self.pair()
        var a = dialler
        let others = (1...8).map { NetworkAddress(ipv4: 10, 1, 0, UInt8($0), port: 4000) }
        _ = try a.connect(
            to: b.staticKey, at: Self.unreachable, alternates: [Self.unreachable] + others, now: .zero)
        _ = Self.transmits(&a, now: .zero)
        let (_, retry) = Self.firstRetry(&a)
        #expect(retry.count == 1 + ProtocolLimits.maxAlternateAddresses)
        #expect(retry.map(\.0) == [Self.unreachable] + others.prefix(ProtocolLimits.maxAlternateAddresses))
    }

    @Test("A peer that answers at its first address is never dialled elsewhere")
    func firstAnswerStops() throws {
        var (a, b) = try Self.pair()
        let id = try a.connect(
            to: b.staticKey, at: EndpointPair.address(2), alternates: [Self.unreachable], now: .zero)
        let sent = EndpointPair.exchange(&a, &b, now: .zero)
        #expect(sent.fromA >= 1)
        #expect(a.connection(id)?.state == .established)
        var now = Instant.zero
        for _ in 0..<100 {
            now = now + .milliseconds(10)
            a.handleTimeout(now: now)
            #expect(!Self.transmits(&a, now: now).contains { $0.0 == Self.unreachable })
        }
    }
}
