import HuddleCrypto
import HuddleTestKit
import Testing

@testable import HuddleProtocol

/// PROTOCOL.md §7.12 "Address discovery": a connection sends OBSERVED_ADDRESS whenever its route becomes a direct
/// one, and a connection established on a direct route has become one then (issue 40: only a move from relayed to
/// direct sent it, so a node never learned its reflexive address from a member it reached directly).
@Suite("OBSERVED_ADDRESS on direct connections")
struct ObservedAddressTests {
    @Test("Both ends of a connection direct from the start learn the address the other sees them at")
    func directFromTheStart() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        #expect(a.reflexiveAddresses.isEmpty && b.reflexiveAddresses.isEmpty)
        // The frame goes in the next packets each side sends (here: a message and its acknowledgement).
        let toB = try #require(a.connectionID(for: b.staticKey))
        _ = try a.send([1], on: ConnectionRestartTests.channel, to: toB)
        EndpointPair.exchange(&a, &b, now: .zero + .milliseconds(1))
        // The endpoint learns the address when its owner takes the connection's events.
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        #expect(b.reflexiveAddresses == [EndpointPair.address(2)])
        #expect(a.reflexiveAddresses == [EndpointPair.address(1)])
    }
}
