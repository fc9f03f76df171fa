import Foundation
import HuddleCrypto
import HuddleProtocol
import Testing

@testable import Huddle

/// Issue 12: what a newcomer runs into first with the API (joining with one's own identity, Apple parity of
/// `GroupSession`, advertised addresses).
@Suite("A newcomer's first session (API)")
struct NewcomerTests {
    @Test("A second node on a port another node holds fails with addressInUse naming the port and this process")
    func portInUse() async throws {
        let first = try await startNode("first", seed: 1210)
        defer { Task { await first.shutdown() } }
        let port = Int(first.localAddress.port)
        var random = ChaChaRandomGenerator(seed: 1211)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "second")
        configuration.port = port
        do {
            let second = try await HuddleNode.start(configuration)
            await second.shutdown()
            Issue.record("a second node bound port \(port), which the first holds")
        } catch HuddleError.transport(.addressInUse(let host, let refused, let holder)) {
            #expect(host == "127.0.0.1" && refused == port)
            // This test process holds it; as root (CI) it is named with its pid, else only when the system tells.
            if let holder { #expect(holder.hasSuffix("(pid \(getpid()))"), "\(holder)") }
            let message = "\(HuddleError.transport(.addressInUse(host: host, port: refused, holder: holder)))"
            #expect(message.contains("port \(port)") && message.contains("already in use"), "\(message)")
        } catch {
            Issue.record("unexpected error: \(error)")
        }
    }

    @Test("Joining a ticket that names only this node's own identity fails at once with a typed error")
    func joinOwnTicket() async throws {
        var random = ChaChaRandomGenerator(seed: 1201)
        let identity = Identity(using: &random)
        let host = try await HuddleNode.start(.init(identity: identity, name: "host"))
        // A second node with the same identity, as two processes sharing one identity file are.
        let twin = try await HuddleNode.start(.init(identity: identity, name: "twin"))
        defer { Task { for node in [host, twin] { await node.shutdown() } } }
        let session = try await host.activate(DrawTogether(canvas: "mine"))
        try await session.join()
        let invitation = try await session.makeInvitation()
        let clock = ContinuousClock()
        let started = clock.now
        do {
            _ = try await withTimeout(10, "the twin's join fails") {
                try await twin.join(invitation, as: DrawTogether.self)
            }
            Issue.record("a node joined its own session")
        } catch HuddleError.invitationNamesOnlyThisNode(let fingerprint) {
            #expect(fingerprint == twin.fingerprint)
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        // At once: no network I/O happens (alone it takes well under 10 ms). The bound only has to separate that
        // from the 30 s join timeout; 1 s was exceeded (2.4 s) under the full suite's parallel load.
        #expect(clock.now - started < .seconds(5), "refused at once, not after the join timeout")
        // The twin is still free to join another session.
        let other = try await startNode("other", seed: 1202)
        defer { Task { await other.shutdown() } }
        let otherSession = try await other.activate(DrawTogether(canvas: "theirs"))
        try await otherSession.join()
        let joined = try await withTimeout(20, "the twin joins someone else's session") {
            try await twin.join(try await otherSession.makeInvitation(), as: DrawTogether.self)
        }
        #expect(joined.state == .joined)
    }

    @Test("isLocallyInitiated is true for the node that activated the session, false for a joiner")
    func locallyInitiated() async throws {
        let host = try await startNode("host", seed: 1203)
        let ada = try await startNode("ada", seed: 1204)
        defer { Task { for node in [host, ada] { await node.shutdown() } } }
        let session = try await host.activate(DrawTogether(canvas: "sketch"))
        #expect(session.isLocallyInitiated)
        try await session.join()
        let invitation = try await session.makeInvitation()
        let joined = try await withTimeout(20, "ada joins") { try await ada.join(invitation, as: DrawTogether.self) }
        #expect(!joined.isLocallyInitiated)
        #expect(session.isLocallyInitiated)
    }

    @Test("Setting activity reports a failure on activityErrors; setActivity throws it typed")
    func activityFailures() async throws {
        let host = try await startNode("host", seed: 1205)
        defer { Task { await host.shutdown() } }
        let session = try await host.activate(DrawTogether(canvas: "sketch"))
        let errors = session.activityErrors
        // Not joined yet: the change cannot be applied.
        session.activity = DrawTogether(canvas: "too early")
        let reported = try await withTimeout(10, "the failure is reported") { () -> HuddleError? in
            for await error in errors { return error }
            return nil
        }
        guard case .notJoined = reported else {
            Issue.record("reported \(String(describing: reported))")
            return
        }
        await #expect(throws: HuddleError.self) { try await session.setActivity(DrawTogether(canvas: "typed")) }
        do {
            try await session.setActivity(DrawTogether(canvas: "typed"))
        } catch {
            // `error` is a HuddleError, statically: typed throws.
            guard case .notJoined = error else { Issue.record("threw \(error)"); return }
        }
    }

    @Test("Activity assignments apply in order: the last one wins on every member")
    func activityAssignmentsInOrder() async throws {
        let host = try await startNode("host", seed: 1206)
        let ada = try await startNode("ada", seed: 1207)
        defer { Task { for node in [host, ada] { await node.shutdown() } } }
        let session = try await host.activate(DrawTogether(canvas: "0"))
        try await session.join()
        let invitation = try await session.makeInvitation()
        let joined = try await withTimeout(20, "ada joins") { try await ada.join(invitation, as: DrawTogether.self) }
        for index in 1...50 { session.activity = DrawTogether(canvas: "\(index)") }
        // The point is the order, not the speed: alone this takes about 40 ms, but during the full suite's parallel
        // load (a 5,000/s initiation flood, an 8-node mesh) 50 sequential applies once took more than 10 s.
        #expect(
            await eventually("the host ends at the last assignment", within: 30) { session.activity.canvas == "50" })
        #expect(await eventually("ada ends at the last assignment", within: 30) { joined.activity.canvas == "50" })
    }

    @Test("Advertised addresses: a bound address as is; on a wildcard, interface addresses first, loopback last")
    func advertisedAddressChoice() {
        let lan = NetworkAddress(ipv4: 192, 168, 1, 20, port: 0)
        let other = NetworkAddress(ipv4: 10, 0, 0, 5, port: 0)
        let loopback = NetworkAddress(ipv4: 127, 0, 0, 1, port: 0)
        let linkLocal = NetworkAddress(ipv4: 169, 254, 3, 4, port: 0)
        let ipv6Global = NetworkAddress(
            ipv6: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1], port: 0)!
        let ipv6LinkLocal = NetworkAddress(ipv6: [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [7], port: 0)!
        let interfaces = [loopback, lan, linkLocal, other, lan, ipv6Global, ipv6LinkLocal]

        let bound = NetworkAddress(ipv4: 192, 168, 1, 20, port: 4000)
        #expect(AdvertisedAddresses.choose(bound: bound, interfaces: interfaces) == [bound])

        let wildcard = NetworkAddress(ipv4: 0, 0, 0, 0, port: 4000)
        #expect(
            AdvertisedAddresses.choose(bound: wildcard, interfaces: interfaces) == [
                NetworkAddress(ipv4: 192, 168, 1, 20, port: 4000), NetworkAddress(ipv4: 10, 0, 0, 5, port: 4000),
                NetworkAddress(ipv4: 127, 0, 0, 1, port: 4000),
            ])
        #expect(
            AdvertisedAddresses.choose(bound: wildcard, interfaces: [loopback])
                == [NetworkAddress(ipv4: 127, 0, 0, 1, port: 4000)])
        // `::` is dual-stack: IPv4 first, then IPv6, and 127.0.0.1, which IPv4 and IPv6 sockets both reach.
        let ipv6Wildcard = NetworkAddress(ipv6: [UInt8](repeating: 0, count: 16), port: 4000)!
        #expect(
            AdvertisedAddresses.choose(bound: ipv6Wildcard, interfaces: interfaces) == [
                NetworkAddress(ipv4: 192, 168, 1, 20, port: 4000), NetworkAddress(ipv4: 10, 0, 0, 5, port: 4000),
                NetworkAddress(ipv6: ipv6Global.addressBytes, port: 4000)!,
                NetworkAddress(ipv4: 127, 0, 0, 1, port: 4000),
            ])
        // Never more than a member record carries.
        let many = (1...20).map { NetworkAddress(ipv4: 10, 0, 1, UInt8($0), port: 0) }
        let chosen = AdvertisedAddresses.choose(bound: wildcard, interfaces: many)
        #expect(chosen.count == HuddleNode.maxAdvertisedAddresses && chosen.last?.addressBytes == [127, 0, 0, 1])
        // Given addresses: port 0 becomes the bound port, duplicates go.
        #expect(
            AdvertisedAddresses.resolving([lan, lan, NetworkAddress(ipv4: 10, 0, 0, 5, port: 9)], port: 4000) == [
                NetworkAddress(ipv4: 192, 168, 1, 20, port: 4000), NetworkAddress(ipv4: 10, 0, 0, 5, port: 9),
            ])
    }

    @Test("A node on 0.0.0.0 advertises this machine's interface addresses, loopback last, and tickets name the first")
    func wildcardNode() async throws {
        var random = ChaChaRandomGenerator(seed: 1208)
        let node = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "wide", host: "0.0.0.0"))
        defer { Task { await node.shutdown() } }
        let port = node.localAddress.port
        let expected = AdvertisedAddresses.choose(
            bound: NetworkAddress(ipv4: 0, 0, 0, 0, port: port), interfaces: AdvertisedAddresses.interfaceAddresses())
        #expect(node.advertisedAddresses == expected)
        #expect(node.advertisedAddresses.last == NetworkAddress(ipv4: 127, 0, 0, 1, port: port))
        #expect(node.advertisedAddresses.allSatisfy { $0.port == port && !$0.addressBytes.allSatisfy { $0 == 0 } })
        let session = try await node.activate(DrawTogether(canvas: "wide"))
        try await session.join()
        let ticket = try await session.makeInvitation()
        #expect(ticket.members.first?.address == node.advertisedAddresses.first)

        // Given addresses are used as given (port 0: the bound port).
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "told", host: "0.0.0.0")
        configuration.advertisedAddresses = [NetworkAddress(ipv4: 127, 0, 0, 2, port: 0)]
        let told = try await HuddleNode.start(configuration)
        defer { Task { await told.shutdown() } }
        #expect(told.advertisedAddresses == [NetworkAddress(ipv4: 127, 0, 0, 2, port: told.localAddress.port)])
    }
}

@Suite("Tickets name every address a member has")
struct TicketAddressTests {
    @Test(
        "A host advertised first at an address nobody reaches is joined at its second, which the ticket names too",
        .timeLimit(.minutes(1)))
    func secondAddressJoins() async throws {
        var random = ChaChaRandomGenerator(seed: 61)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "host")
        // TEST-NET-1 (RFC 5737) first: a LAN address elsewhere, a stale public address. Port 0: the bound port.
        configuration.advertisedAddresses = [
            NetworkAddress(ipv4: 192, 0, 2, 1, port: 0), NetworkAddress(ipv4: 127, 0, 0, 1, port: 0),
        ]
        let host = try await HuddleNode.start(configuration)
        let guest = try await startNode("guest", seed: 62)
        defer { Task { for node in [host, guest] { await node.shutdown() } } }
        let session = try await host.activate(DrawTogether(canvas: "addresses"))
        try await session.join()
        let invitation = try Invitation(parsing: try await session.makeInvitation().ticket)
        let port = host.localAddress.port
        #expect(
            invitation.members.first?.addresses == [
                NetworkAddress(ipv4: 192, 0, 2, 1, port: port), NetworkAddress(ipv4: 127, 0, 0, 1, port: port),
            ])
        let started = ContinuousClock.now
        let joined = try await withTimeout(20, "the guest joins") {
            try await guest.join(invitation, as: DrawTogether.self)
        }
        #expect(joined.state == .joined)
        // The second address is dialled a quarter second after the first (RFC 8305's stagger), not after a timeout.
        #expect(ContinuousClock.now - started < .seconds(3))
    }
}

@Suite("Dual-stack nodes")
struct DualStackTests {
    @Test(
        "A node on [::] is joined by an IPv4-only node and an IPv6 node; it sees the IPv4 one at its IPv4 address, not v4-mapped",
        .timeLimit(.minutes(1)))
    func dualStackHost() async throws {
        var random = ChaChaRandomGenerator(seed: 71)
        var hostConfiguration = HuddleNode.Configuration(identity: Identity(using: &random), name: "host", host: "::")
        // Loopback only (port 0: the bound port): the IPv4 one first, which an IPv4 socket can reach.
        let loopback6 = NetworkAddress(ipv6: [UInt8](repeating: 0, count: 15) + [1], port: 0)!
        hostConfiguration.advertisedAddresses = [NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), loopback6]
        let host = try await HuddleNode.start(hostConfiguration)
        let guest4 = try await startNode("guest4", seed: 72)
        var sixConfiguration = HuddleNode.Configuration(identity: Identity(using: &random), name: "guest6", host: "::1")
        sixConfiguration.advertisedAddresses = [loopback6]
        let guest6 = try await HuddleNode.start(sixConfiguration)
        defer { Task { for node in [host, guest4, guest6] { await node.shutdown() } } }
        #expect(host.localAddress.family == .ipv6 && guest4.localAddress.family == .ipv4)
        let session = try await host.activate(DrawTogether(canvas: "dual"))
        try await session.join()
        let invitation = try Invitation(parsing: try await session.makeInvitation().ticket)
        let joined4 = try await withTimeout(20, "the IPv4 guest joins") {
            try await guest4.join(invitation, as: DrawTogether.self)
        }
        // The IPv6 guest dials the host at its first address, 127.0.0.1, and cannot: its socket is IPv6 only (bound
        // to ::1). It reaches the host at the second, ::1, 250 ms later.
        let joined6 = try await withTimeout(20, "the IPv6 guest joins") {
            try await guest6.join(invitation, as: DrawTogether.self)
        }
        #expect(joined4.state == .joined && joined6.state == .joined)
        #expect(await eventually("the host sees both guests") { session.activeParticipants.count == 3 })
        let paths = Dictionary(
            uniqueKeysWithValues: try await session.peerStatistics().map { ($0.participant.name, $0.path) })
        #expect(paths["guest4"] == .direct(NetworkAddress(ipv4: 127, 0, 0, 1, port: guest4.localAddress.port)))
        #expect(paths["guest6"] == .direct(loopback6.withPort(guest6.localAddress.port)))
    }
}
