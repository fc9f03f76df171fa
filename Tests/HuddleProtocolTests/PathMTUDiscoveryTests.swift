import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// Path MTU discovery (RFC 8899): the search order, the limits on probes, the raise timer and black-hole detection of
/// ``PathMTUDiscovery``, then a connection finding a path's size and surviving its shrinking.
@Suite("Path MTU discovery")
struct PathMTUDiscoveryTests {
    static let start = Instant.zero

    /// Loses `size`'s probes until the search moves on; returns the next size tried.
    static func fail(_ discovery: inout PathMTUDiscovery, at size: Int, from packetNumber: inout UInt64) -> Int? {
        for _ in 0..<ProtocolLimits.pathMTUProbeAttempts {
            let outcome1 = discovery.probeDue(now: start, largest: .max)
            #expect(outcome1 == size)
            discovery.onProbeSent(packetNumber: packetNumber, size: size)
            let outcome2 = discovery.probeDue(now: start, largest: .max)
            #expect(outcome2 == nil, "one probe in flight at a time")
            let outcome3 = discovery.onLost(packetNumber: packetNumber, now: start)
            #expect(outcome3)
            packetNumber += 1
        }
        return discovery.probeDue(now: start, largest: .max)
    }

    @Test("Sizes are tried largest first; three lost probes give a size up; the first confirmed size ends the search")
    func searchOrder() {
        var discovery = PathMTUDiscovery(base: 1200, ceiling: 8972)
        var number: UInt64 = 10
        #expect(Self.fail(&discovery, at: 8972, from: &number) == 8952)
        #expect(Self.fail(&discovery, at: 8952, from: &number) == 1472)
        discovery.onProbeSent(packetNumber: number, size: 1472)
        #expect(discovery.current == 1200, "not confirmed before its acknowledgement")
        discovery.onAcknowledged(packetNumber: number, bytes: 1472, now: Self.start)
        #expect(discovery.current == 1472)
        let outcome4 = discovery.probeDue(now: Self.start + .seconds(599), largest: .max)
        #expect(outcome4 == nil, "search over until the raise timer")
        let outcome5 = discovery.probeDue(now: Self.start + ProtocolLimits.pathMTURaiseInterval, largest: .max)
        #expect(outcome5 == 8972, "then again")
        #expect(discovery.current == 1472, "the confirmed size stays while the new search runs")
    }

    @Test("A path that carries nothing above the base ends at the base, and a ceiling at the base never probes")
    func nothingLarger() {
        var discovery = PathMTUDiscovery(base: 1200, ceiling: 1472)
        var number: UInt64 = 0
        var next = Self.fail(&discovery, at: 1472, from: &number)
        for size in [1464, 1452, 1444, 1392, 1372, 1252, 1232] {
            #expect(next == size)
            next = Self.fail(&discovery, at: size, from: &number)
        }
        #expect(next == nil)
        #expect(discovery.current == 1200)
        let outcome6 = discovery.probeDue(now: Self.start + ProtocolLimits.pathMTURaiseInterval, largest: .max)
        #expect(outcome6 == 1472)

        var disabled = PathMTUDiscovery(base: 1200, ceiling: 1200)
        #expect(!disabled.isEnabled)
        let outcome7 = disabled.probeDue(now: Self.start, largest: .max)
        #expect(outcome7 == nil)
    }

    @Test("A probe is at most what the window allows: a small window confirms 1472 first, the ceiling comes later")
    func windowLimited() {
        var discovery = PathMTUDiscovery(base: 1200, ceiling: 8972)
        let small = discovery.probeDue(now: Self.start, largest: 14_720 / 4)
        #expect(small == 1472)
        discovery.onProbeSent(packetNumber: 1, size: 1472)
        discovery.onAcknowledged(packetNumber: 1, bytes: 1472, now: Self.start)
        #expect(discovery.current == 1472)
        #expect(discovery.isSearching, "8972 and 8952 are still undecided")
        let stillSmall = discovery.probeDue(now: Self.start, largest: 14_720 / 4)
        #expect(stillSmall == nil)
        let grown = discovery.probeDue(now: Self.start, largest: 40_000)
        #expect(grown == 8972)
    }

    @Test("Only the probe in flight counts: other packets' losses and acknowledgements leave the search alone")
    func otherPackets() {
        var discovery = PathMTUDiscovery(base: 1200, ceiling: 1472)
        discovery.onProbeSent(packetNumber: 5, size: 1472)
        let outcome8 = discovery.onLost(packetNumber: 4, now: Self.start)
        #expect(!outcome8)
        discovery.onAcknowledged(packetNumber: 6, bytes: 1200, now: Self.start)
        #expect(discovery.current == 1200)
        let outcome9 = discovery.probeDue(now: Self.start, largest: .max)
        #expect(outcome9 == nil)
        discovery.onAcknowledged(packetNumber: 5, bytes: 1472, now: Self.start)
        #expect(discovery.current == 1472)
    }

    @Test(
        "Three loss events of large datagrams with none as large acknowledged between: back to the base, search again")
    func blackHole() {
        var discovery = PathMTUDiscovery(base: 1200, ceiling: 1472)
        discovery.onProbeSent(packetNumber: 1, size: 1472)
        discovery.onAcknowledged(packetNumber: 1, bytes: 1472, now: Self.start)
        // Two suspicious events, then a full-size datagram acknowledged: the count starts over.
        let first = discovery.onLossEvent(smallestLostAboveBase: 1472, now: Self.start)
        let second = discovery.onLossEvent(smallestLostAboveBase: 1472, now: Self.start)
        #expect(!first && !second)
        discovery.onAcknowledged(packetNumber: 7, bytes: 1472, now: Self.start)
        let carried = discovery.onLossEvent(smallestLostAboveBase: 1472, now: Self.start)
        #expect(!carried, "a datagram as large got through since the last event")
        let small = discovery.onLossEvent(smallestLostAboveBase: nil, now: Self.start)
        #expect(!small, "small losses say nothing")
        // Medium-sized datagrams getting through do not hide the large ones vanishing (quinn's rule).
        discovery.onAcknowledged(packetNumber: 9, bytes: 1300, now: Self.start)
        let third = discovery.onLossEvent(smallestLostAboveBase: 1472, now: Self.start)
        discovery.onAcknowledged(packetNumber: 11, bytes: 1250, now: Self.start)
        let fourth = discovery.onLossEvent(smallestLostAboveBase: 1472, now: Self.start)
        #expect(!third && !fourth)
        #expect(discovery.current == 1472)
        let fifth = discovery.onLossEvent(smallestLostAboveBase: 1472, now: Self.start)
        #expect(fifth)
        #expect(discovery.current == 1200)
        #expect(discovery.blackHoles == 1)
        let next = discovery.probeDue(now: Self.start, largest: .max)
        #expect(next == 1472, "the whole range is searched again: a false alarm costs one probe")
    }

    @Test("Lost probes are counted per size: a window that alternates between two sizes still gives each up")
    func perSizeCounts() {
        var discovery = PathMTUDiscovery(base: 1200, ceiling: 8972)
        var number: UInt64 = 0
        for round in 0..<ProtocolLimits.pathMTUProbeAttempts {
            for largest in [40_000, 3_680] {
                let size = discovery.probeDue(now: Self.start, largest: largest)
                #expect(size == (largest == 40_000 ? 8972 : 1472), "round \(round)")
                discovery.onProbeSent(packetNumber: number, size: size ?? 0)
                let lost = discovery.onLost(packetNumber: number, now: Self.start)
                #expect(lost)
                number += 1
            }
        }
        let next = discovery.probeDue(now: Self.start, largest: 40_000)
        #expect(next == 1464, "8972 and 8952 are skipped once 8972 failed, and 1472 failed too")
    }

    // MARK: - A connection

    /// `a` and `b` connected with NewReno (whose window only shrinks on a congestion event), exchanging 200 KiB a
    /// second from a to b for `seconds` over a path that drops datagrams larger than `mtu(now)`; returns both.
    static func transfer(
        seconds: Int, mtu: (Instant) -> Int
    ) throws -> (a: Endpoint, b: Endpoint, droppedForSize: Int) {
        var configuration = ConnectionConfiguration()
        configuration.congestionControl = .newReno
        configuration.maxProbedDatagramSize = WireLimits.maxDatagramSize
        var a = EndpointPair.endpoint(seed: 1, connection: configuration)
        var b = EndpointPair.endpoint(seed: 2, connection: configuration)
        try a.addPeer(ConnectionRestartTests.credentials(for: b.staticKey))
        try b.addPeer(ConnectionRestartTests.credentials(for: a.staticKey))
        // The handshake too crosses the path below (a probe may follow it at once).
        try a.connect(to: b.staticKey, at: EndpointPair.address(2), now: .zero)
        let toB = try #require(a.connectionID(for: b.staticKey))
        var dropped = 0
        var now = Instant.zero
        // 5 ms steps; a message every 20 steps (100 ms).
        for tick in 1...(seconds * 200) {
            now = Instant.zero + .milliseconds(Int64(tick * 5))
            if tick % 20 == 0 {
                _ = try? a.send([UInt8](repeating: 7, count: 20_000), on: ChannelID(16), to: toB)
            }
            a.handleTimeout(now: now)
            b.handleTimeout(now: now)
            // Delivered within the step (a 5 ms one-way delay would only slow the test down).
            for datagram in EndpointPair.drain(&a, now: now) {
                if datagram.count > mtu(now) {
                    dropped += 1
                } else {
                    b.handle(datagram: datagram, from: EndpointPair.address(1), now: now)
                }
            }
            for datagram in EndpointPair.drain(&b, now: now) {
                a.handle(datagram: datagram, from: EndpointPair.address(2), now: now)
            }
            _ = EndpointPair.events(&a)
            _ = EndpointPair.events(&b)
        }
        return (a, b, dropped)
    }

    @Test("A connection settles on the largest size a 1400-byte path carries; lost probes are not losses")
    func connectionFindsSize() throws {
        let (a, b, dropped) = try Self.transfer(seconds: 5) { _ in 1400 }
        let connection = try #require(a.connectionID(for: b.staticKey).flatMap { a.connection($0) })
        #expect(connection.pathDatagramSize == 1392)
        // 1472, 1464, 1452 and 1444 (and 8972 and 8952 once the window holds four of them) each lost three times;
        // nothing but probes was too large.
        #expect(connection.statistics.pathMTUProbesLost >= 12)
        #expect(dropped == connection.statistics.pathMTUProbesLost)
        #expect(connection.statistics.packetsLost == 0, "\(connection.statistics)")
        #expect(
            connection.congestionWindow >= CongestionWindowLimits.initialWindow(maxDatagramSize: 1200),
            "probe losses are no congestion signal")
    }

    @Test("When the path shrinks under a confirmed size, the black hole is found and the transfer goes on")
    func connectionSurvivesShrink() throws {
        let (a, b, _) = try Self.transfer(seconds: 12) { now in now < .zero + .seconds(4) ? 1472 : 1300 }
        let connection = try #require(a.connectionID(for: b.staticKey).flatMap { a.connection($0) })
        #expect(connection.statistics.pathMTUBlackHoles == 1)
        #expect(connection.pathDatagramSize == 1252)
        let receiver = try #require(b.connectionID(for: a.staticKey).flatMap { b.connection($0) })
        // 12 s at 10 messages a second, all delivered but those in the last round trip or so.
        #expect(receiver.statistics.messagesDelivered >= 115, "\(receiver.statistics)")
    }
}
