import HuddleCrypto
import HuddleProtocol
@_spi(Testing) import HuddleTransport
import HuddleWire
import NIOPosix
import Testing

/// A datagram the kernel refuses to send must cost that datagram only. SwiftNIO closes a datagram channel on most
/// `sendmsg` errors (all but EMSGSIZE and EHOSTUNREACH), which used to leave the node with a dead socket that nobody
/// noticed: found by the network-namespace test, where nftables drops in the output hook fail `sendmsg` with EPERM.
/// Sent directly (the default on Linux) the socket stays; through SwiftNIO it is replaced.
@Suite("UDPEndpointDriver survives refused sends")
struct SendFailureTests {
    static let bogusAddresses = [
        NetworkAddress(ipv4: 255, 255, 255, 255, port: 9),
        NetworkAddress(ipv4: 127, 0, 0, 1, port: 0),
    ]

    @Test(
        "After sendmsg fails (EACCES to a broadcast address, EINVAL to port 0) the driver still works",
        arguments: bogusAddresses, [true, false])
    func refusedSendIsSurvived(bogus: NetworkAddress, directSends: Bool) async throws {
        var transport = TransportConfiguration()
        transport.directSends = directSends
        try await withDriverPair(transportA: transport, limit: .seconds(20)) { pair in
            var readerA = try await EventReader(pair.a)
            var readerB = try await EventReader(pair.b)
            // An initiation to a third peer at an address the kernel refuses to send to.
            var random = ChaChaRandomGenerator(seed: 99)
            let stranger = Identity(using: &random).agreementKey.publicKey
            try await pair.a.addPeer(
                PeerCredentials(
                    staticKey: stranger, presharedKey: SecureBytes(count: 32, using: &random),
                    macSecret: SecureBytes(count: 32, using: &random)))
            _ = try await pair.a.connect(to: stranger, at: bogus)
            try await Task.sleep(for: .milliseconds(200))
            // A must still answer B.
            let bToA = try await pair.b.connect(to: pair.a.staticKey, at: pair.a.localAddress)
            _ = try await readerB.connected()
            _ = try await readerA.connected()
            try await pair.b.send([1, 2, 3], on: ChannelID(0), to: bToA)
            #expect(try await readerA.message().bytes == [1, 2, 3])
            let statistics = try await pair.a.statistics()
            #if os(Linux)
                if directSends {
                    #expect(statistics.socketRebinds == 0, "\(statistics)")
                    #expect(statistics.writesRefused >= 1, "\(statistics)")
                    #expect(statistics.datagramsRefused >= 1, "\(statistics)")
                    return
                }
            #endif
            #expect(statistics.socketRebinds >= 1, "\(statistics)")
        }
    }
}
