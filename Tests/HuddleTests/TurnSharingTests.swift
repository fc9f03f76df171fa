import Foundation
import HuddleCLITestSupport
import HuddleCrypto
import Testing

@testable import Huddle

/// TURN servers through the library against a real coturn on loopback: a host shares its server (over TCP) in its
/// tickets; a guest with no TURN server of its own allocates on it when it joins, and the change arrives on
/// ``HuddleNode/turnAllocationChanges()`` as it happens.
@Suite("TURN servers shared in tickets", .serialized)
struct TurnSharingTests {
    @Test(
        "A guest joining with a ticket that shares a TURN server allocates on it, and the stream reports the grant",
        .timeLimit(.minutes(1)))
    func sharedServerReachesTheStream() async throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn(tcp: true)
        defer { coturn.stop() }
        var random = ChaChaRandomGenerator(seed: 38)
        var hostConfiguration = HuddleNode.Configuration(identity: Identity(using: &random), name: "host")
        hostConfiguration.turnServers = [
            TurnServer(
                address: NetworkAddress(ipv4: 127, 0, 0, 1, port: coturn.port), transport: .tcp,
                credentials: TurnCredentials(username: Coturn.username, password: Coturn.password))
        ]
        hostConfiguration.shareTurnServers = true
        let host = try await HuddleNode.start(hostConfiguration)
        let guest = try await startNode("guest", seed: 39)
        defer { Task { for node in [host, guest] { await node.shutdown() } } }

        var hostUpdates = host.turnAllocationChanges().makeAsyncIterator()
        let hostNow = try #require(await hostUpdates.next())
        #expect(hostNow.count == 1 && hostNow.first?.relayedAddress != nil, "\(hostNow)\n\(coturn.log)")

        let session = try await host.activate(DrawTogether(canvas: "turn"))
        try await session.join()
        let invitation = try await session.makeInvitation(validFor: .seconds(600))
        #expect(invitation.turnServers == hostConfiguration.turnServers)
        // A beacon's ticket never carries them.
        let beaconTicket = try await session.makeInvitation(
            validFor: .seconds(60), requiresApproval: false, uses: nil, sharingTurn: false)
        #expect(beaconTicket.turnServers.isEmpty)

        var guestUpdates = guest.turnAllocationChanges().makeAsyncIterator()
        #expect(await guestUpdates.next() == [], "a guest without TURN servers starts with none")
        let joined = try await withTimeout(20, "the guest joins") {
            try await guest.join(invitation, as: DrawTogether.self)
        }
        #expect(joined.state == .joined)
        // The ticket's server is added at the join, connects over TCP and allocates: each step is a new list.
        var granted: TurnAllocation?
        while granted == nil, let allocations = await guestUpdates.next() {
            granted = allocations.first { $0.relayedAddress != nil }
        }
        #expect(granted?.transport == .tcp)
        #expect(granted?.server == NetworkAddress(ipv4: 127, 0, 0, 1, port: coturn.port))
        #expect(await guest.turnAllocations() == [granted].compactMap { $0 })
    }
}
