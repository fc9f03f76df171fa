import Foundation
import HuddleCrypto
import HuddleProtocol
import Testing

@testable import Huddle

/// Eligibility: the rule, and an observer over a node's life. (Interfaces going down and up:
/// NetworkNamespaceTests/EligibilityTests.)
@Suite("GroupStateObserver")
struct GroupStateObserverTests {
    static let lan = NetworkAddress(ipv4: 192, 168, 1, 20, port: 0)
    static let loopback = NetworkAddress(ipv4: 127, 0, 0, 1, port: 0)
    static let loopback6 = NetworkAddress(ipv6: [UInt8](repeating: 0, count: 15) + [1], port: 0)!
    static let global6 = NetworkAddress(
        ipv6: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [5], port: 0)!

    @Test("Bound to one address, an interface must hold it; bound to all, a non-loopback one must exist")
    func rule() {
        let boundLAN = NetworkAddress(ipv4: 192, 168, 1, 20, port: 4000)
        #expect(NetworkPathMonitor.isUsable(bound: boundLAN, interfaces: [Self.loopback, Self.lan]))
        #expect(!NetworkPathMonitor.isUsable(bound: boundLAN, interfaces: [Self.loopback]))
        #expect(
            NetworkPathMonitor.isUsable(bound: NetworkAddress(ipv4: 127, 0, 0, 1, port: 9), interfaces: [Self.loopback])
        )
        let anyIPv4 = NetworkAddress(ipv4: 0, 0, 0, 0, port: 4000)
        #expect(NetworkPathMonitor.isUsable(bound: anyIPv4, interfaces: [Self.loopback, Self.lan]))
        #expect(!NetworkPathMonitor.isUsable(bound: anyIPv4, interfaces: [Self.loopback, Self.loopback6]))
        // An IPv4 socket cannot use an IPv6-only interface; a dual-stack `::` socket can use either.
        #expect(!NetworkPathMonitor.isUsable(bound: anyIPv4, interfaces: [Self.loopback, Self.global6]))
        let anyIPv6 = NetworkAddress(ipv6: [UInt8](repeating: 0, count: 16), port: 4000)!
        #expect(NetworkPathMonitor.isUsable(bound: anyIPv6, interfaces: [Self.loopback6, Self.global6]))
        #expect(NetworkPathMonitor.isUsable(bound: anyIPv6, interfaces: [Self.loopback, Self.lan]))
        #expect(!NetworkPathMonitor.isUsable(bound: anyIPv6, interfaces: [Self.loopback, Self.loopback6]))
    }

    @Test("A loopback node is eligible while it runs; shutting it down ends the updates with false")
    func overANodesLife() async throws {
        var random = ChaChaRandomGenerator(seed: 71)
        let node = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "watched"))
        let observer = GroupStateObserver(node: node)
        #expect(observer.isEligibleForGroupSession)
        let updates = Task {
            var seen: [Bool] = []
            for await eligible in observer.eligibilityUpdates { seen.append(eligible) }
            return seen
        }
        try await Task.sleep(for: .milliseconds(50))
        await node.shutdown()
        let seen = try await withTimeout(5, "the updates end") { await updates.value }
        #expect(seen == [true, false])
        #expect(!observer.isEligibleForGroupSession)
        // An observer made after the shutdown says the same, and its updates end at once.
        let late = GroupStateObserver(node: node)
        #expect(!late.isEligibleForGroupSession)
        var lateSeen: [Bool] = []
        for await eligible in late.eligibilityUpdates { lateSeen.append(eligible) }
        #expect(lateSeen == [false])
    }
}

/// A discovering observer combines the path with the sessions heard nearby (fed here by hand: the real list comes
/// from multicast, tested across network namespaces in LocalDiscoveryTests).
@Suite("GroupStateObserver discovering nearby sessions")
struct DiscoveringObserverTests {
    @Test("Eligible only while a session is nearby and the path is usable; the node's shutdown ends it")
    func combined() async throws {
        var random = ChaChaRandomGenerator(seed: 72)
        let node = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "looking"))
        let (lists, feed) = AsyncStream.makeStream(of: [NearbySession].self)
        let observer = GroupStateObserver(node: node, nearby: lists)
        #expect(!observer.isEligibleForGroupSession && observer.nearbySessions.isEmpty)
        let updates = Task {
            var seen: [Bool] = []
            for await eligible in observer.eligibilityUpdates { seen.append(eligible) }
            return seen
        }
        try await Task.sleep(for: .milliseconds(50))
        let ana = NearbyListTests.session("ana", seed: 3)
        feed.yield([ana])
        #expect(await eventually("eligible") { observer.isEligibleForGroupSession })
        #expect(observer.nearbySessions.map(\.name) == ["ana"])
        feed.yield([])
        #expect(await eventually("not eligible") { !observer.isEligibleForGroupSession })
        feed.yield([ana])
        #expect(await eventually("eligible again") { observer.isEligibleForGroupSession })
        await node.shutdown()
        let seen = try await withTimeout(5, "the updates end") { await updates.value }
        // A reader that falls behind sees only the newest value, so the middle may be shortened; never the ends.
        #expect(seen.first == false && seen.last == false && seen.contains(true), "\(seen)")
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 != $1 }, "only changes are published: \(seen)")
        feed.finish()
    }
}
