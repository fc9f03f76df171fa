import HuddleProtocol
import HuddleTransport
import NIOCore
import NIOPosix
import Testing

@testable import Huddle

#if canImport(Glibc)
    import Glibc
#endif

/// The library's one interface listing, checked against SwiftNIO's own reading of the same `getifaddrs`.
@Suite("Network interfaces")
struct NetworkInterfaceTests {
    @Test("Every address SwiftNIO lists is listed, with its interface's name; loopback is up and flagged")
    func matchesSwiftNIO() throws {
        let ours = NetworkInterface.list()
        let theirs = try System.enumerateDevices()
        for device in theirs {
            guard let socketAddress = device.address, let address = NetworkAddress(socketAddress) else { continue }
            let unported = address.withPort(0)
            #expect(
                ours.contains { $0.name == device.name && $0.address == unported },
                "\(device.name) \(unported) is missing from \(ours)")
        }
        let loopback = try #require(ours.first { $0.address == NetworkAddress(ipv4: 127, 0, 0, 1, port: 0) })
        #expect(loopback.has(Int32(IFF_UP) | Int32(IFF_LOOPBACK)))
    }

    @Test("Discovery uses the up, multicast-capable IPv4 interfaces other than loopback; advertising the up ones")
    func filters() {
        let all = NetworkInterface.list()
        let multicast = NearbySession.multicastInterfaces()
        #expect(multicast.allSatisfy { $0.address.family == .ipv4 && !AdvertisedAddresses.isLoopback($0.address) })
        #expect(multicast.allSatisfy { $0.has(Int32(IFF_UP) | Int32(IFF_MULTICAST)) })
        #expect(
            multicast.count
                == all.filter {
                    $0.address.family == .ipv4 && !AdvertisedAddresses.isLoopback($0.address)
                        && $0.has(Int32(IFF_UP) | Int32(IFF_MULTICAST))
                }.count)
        #expect(AdvertisedAddresses.interfaceAddresses() == all.filter { $0.has(Int32(IFF_UP)) }.map(\.address))
    }

    @Test("The multicast group's value is 239.255.72.68 in host order")
    func groupValue() {
        #expect(NearbySession.groupAddress == 0xEFFF_4844)
        #expect(NearbySession.ipv4Value(NetworkAddress(ipv4: 10, 1, 2, 3, port: 9)) == 0x0A01_0203)
    }
}
