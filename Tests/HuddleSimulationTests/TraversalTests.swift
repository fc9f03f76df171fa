import HuddleProtocol
import HuddleTestKit
import Testing

/// NAT traversal in the simulator (issue 14): two endpoints behind modelled NATs and a public relay. Every message is
/// checked on arrival (exactly once, in order, byte-identical) and every buffer against its limit, after every event.
@Suite("NAT traversal")
struct TraversalTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5]

    @Test("Behind two cone NATs, the connection starts on the relay and goes direct within 2 s", arguments: seeds)
    func coneToCone(seed: UInt64) throws {
        let outcome = try TraversalScenario(natA: .endpointIndependent, natB: .endpointIndependent).run(seed: seed)
        #expect(!outcome.finalRoute.isRelayed, "ended on \(outcome.finalRoute)")
        let direct = try #require(outcome.wentDirectAt)
        print("traversal seed \(seed): cone <-> cone direct at \(direct), all delivered at \(outcome.finishedAt)")
        #expect(direct - .zero < .seconds(2), "went direct at \(direct)")
    }

    @Test("A symmetric NAT on either side keeps the connection on the relay, and everything arrives", arguments: seeds)
    func symmetricFallsBackToRelay(seed: UInt64) throws {
        for (natA, natB) in [
            (SimulatedNAT.Mapping.endpointDependent, SimulatedNAT.Mapping.endpointIndependent),
            (.endpointIndependent, .endpointDependent), (.endpointDependent, .endpointDependent),
        ] {
            let outcome = try TraversalScenario(natA: natA, natB: natB, bulkBytes: 1 << 20).run(seed: seed)
            #expect(outcome.finalRoute.isRelayed, "\(natA) <-> \(natB) ended on \(outcome.finalRoute)")
            #expect(outcome.packetsRelayed > 100)
        }
    }

    @Test("A public peer is reached directly, with no relay in the way", arguments: seeds)
    func publicPeer(seed: UInt64) throws {
        let outcome = try TraversalScenario(natA: .endpointIndependent, natB: nil, bulkBytes: 1 << 20).run(seed: seed)
        #expect(!outcome.finalRoute.isRelayed)
    }

    @Test(
        "A NAT rebinding in the middle of a transfer loses nothing: the peer migrates to the new mapping",
        arguments: seeds)
    func rebindingMidTransfer(seed: UInt64) throws {
        // 16 MiB over 20 Mbit/s takes about 7 s; the mapping changes at 2 s.
        let outcome = try TraversalScenario(
            natA: .endpointIndependent, natB: nil, bulkBytes: 16 << 20, rebindAt: .seconds(2),
            link: {
                var link = LinkConditions.clean(latency: .milliseconds(10)); link.bandwidth = 2_500_000; return link
            }()
        ).run(seed: seed)
        #expect(outcome.migrationsAtB >= 1)
        #expect(!outcome.finalRoute.isRelayed)
    }
}
