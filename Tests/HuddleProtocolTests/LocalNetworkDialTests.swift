import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol

/// A member advertises its public address first (a port mapping, what reaches it from anywhere); a peer on the
/// same LAN dials its LAN address first instead, so the two do not meet hairpinned through their router.
@Suite("Dialling the local network first")
struct LocalNetworkDialTests {
    let mapped = NetworkAddress(ipv4: 198, 51, 100, 7, port: 7000)
    let lan = NetworkAddress(ipv4: 192, 168, 1, 30, port: 7000)
    let ipv6 = NetworkAddress(
        ipv6: [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0] + [UInt8](repeating: 0, count: 7) + [9], port: 7000)!

    @Test("An address in our own private /24 (or IPv6 /64) goes first; otherwise the record's order stands")
    func ordering() {
        let ours = [NetworkAddress(ipv4: 192, 168, 1, 20, port: 4000)]
        #expect(Endpoint.preferringLocalNetwork([mapped, lan, ipv6], local: ours) == [lan, mapped, ipv6])
        #expect(Endpoint.preferringLocalNetwork([mapped, lan], local: []) == [mapped, lan])
        let elsewhere = [NetworkAddress(ipv4: 192, 168, 2, 20, port: 4000)]
        #expect(Endpoint.preferringLocalNetwork([mapped, lan], local: elsewhere) == [mapped, lan])
        // Public addresses sharing a /24 are not a LAN.
        let publicNeighbour = [NetworkAddress(ipv4: 198, 51, 100, 8, port: 4000)]
        #expect(Endpoint.preferringLocalNetwork([lan, mapped], local: publicNeighbour) == [lan, mapped])
        let ours6 = [
            NetworkAddress(ipv6: Array(ipv6.addressBytes.prefix(8)) + [UInt8](repeating: 7, count: 8), port: 1)!
        ]
        #expect(Endpoint.preferringLocalNetwork([mapped, lan, ipv6], local: ours6) == [ipv6, mapped, lan])
        let loopback = [NetworkAddress(ipv4: 127, 0, 0, 1, port: 4000)]
        let peerLoopback = NetworkAddress(ipv4: 127, 0, 0, 1, port: 7000)
        #expect(Endpoint.preferringLocalNetwork([mapped, peerLoopback], local: loopback) == [peerLoopback, mapped])
    }

    @Test("The first initiation goes to the LAN address at once; the public one from the first retry")
    func firstInitiation() throws {
        var a = EndpointPair.endpoint(seed: 21)
        let b = EndpointPair.endpoint(seed: 22)
        try a.addPeer(EndpointPair.credentials(for: b.staticKey))
        a.setLocalAddresses([NetworkAddress(ipv4: 192, 168, 1, 20, port: 4000)])
        try a.connect(to: b.staticKey, at: mapped, alternates: [lan], now: .zero)
        var first: [NetworkAddress] = []
        while let (destination, _) = a.pollTransmit(now: .zero) { first.append(destination) }
        #expect(first == [lan])
        let retry = Instant.zero + ConnectionConfiguration().handshakeRetryInterval
        a.handleTimeout(now: retry)
        var second: [NetworkAddress] = []
        while let (destination, _) = a.pollTransmit(now: retry) { second.append(destination) }
        #expect(Set(second) == [lan, mapped])
    }
}
