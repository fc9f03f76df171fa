import HuddleProtocol
import Testing

@testable import Huddle

/// Which routers a node asks for a port mapping: the default gateways of Linux's routing table, reached from a
/// private address.
@Suite("Home gateway discovery")
struct HomeGatewayTests {
    @Test("The default routes' gateways are read from /proc/net/route's text (native byte order), once each")
    func defaultGateways() {
        // Gateway 192.168.1.1 on a little-endian machine prints as 0101A8C0.
        let native = { (a: UInt8, b: UInt8, c: UInt8, d: UInt8) -> String in
            let value = [a, b, c, d].withUnsafeBytes { $0.load(as: UInt32.self) }
            return String(value, radix: 16, uppercase: true).leftPadded(to: 8)
        }
        let table = """
            Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
            eth0\t00000000\t\(native(192, 168, 1, 1))\t0003\t0\t0\t100\t00000000\t0\t0\t0
            eth0\t\(native(192, 168, 1, 0))\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
            wlan0\t00000000\t\(native(10, 0, 0, 1))\t0003\t0\t0\t600\t00000000\t0\t0\t0
            eth1\t00000000\t\(native(192, 168, 1, 1))\t0003\t0\t0\t200\t00000000\t0\t0\t0
            tun0\t00000000\t\(native(172, 16, 0, 1))\t0001\t0\t0\t50\t00000000\t0\t0\t0
            """
        #expect(
            HomeGateway.defaultGateways(routeTable: table) == [
                NetworkAddress(ipv4: 192, 168, 1, 1, port: 0), NetworkAddress(ipv4: 10, 0, 0, 1, port: 0),
            ])
        #expect(HomeGateway.defaultGateways(routeTable: "").isEmpty)
        #expect(HomeGateway.defaultGateways(routeTable: "Iface\nbroken line").isEmpty)
    }

    @Test("Private space is RFC 1918 and RFC 6598's 100.64/10; public, loopback and IPv6 addresses are not")
    func privateAddresses() {
        for (address, expected) in [
            (NetworkAddress(ipv4: 10, 1, 2, 3, port: 0), true),
            (NetworkAddress(ipv4: 172, 16, 0, 1, port: 0), true),
            (NetworkAddress(ipv4: 172, 31, 255, 1, port: 0), true),
            (NetworkAddress(ipv4: 172, 32, 0, 1, port: 0), false),
            (NetworkAddress(ipv4: 192, 168, 0, 1, port: 0), true),
            (NetworkAddress(ipv4: 100, 64, 0, 1, port: 0), true),
            (NetworkAddress(ipv4: 100, 128, 0, 1, port: 0), false),
            (NetworkAddress(ipv4: 192, 0, 2, 2, port: 0), false), (NetworkAddress(ipv4: 127, 0, 0, 1, port: 0), false),
            (NetworkAddress(ipv6: [0xFD] + [UInt8](repeating: 0, count: 15), port: 0)!, false),
        ] {
            #expect(HomeGateway.isPrivate(address) == expected, "\(address)")
        }
    }

    @Test("The address toward a gateway is the kernel's source for it; loopback goes out from loopback")
    func localAddress() {
        #expect(
            HomeGateway.localAddress(toward: NetworkAddress(ipv4: 127, 0, 0, 1, port: 0))
                == NetworkAddress(ipv4: 127, 0, 0, 1, port: 0))
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
