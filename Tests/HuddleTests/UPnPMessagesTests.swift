import HuddleProtocol
import Testing

@testable import Huddle

/// UPnP-IGD's text, on bytes Debian's miniupnpd 2.3.1 sent (captured 2026-11-29 in a router namespace): the SSDP
/// answer, the device description, SOAP answers and faults; and what a node sends.
@Suite("UPnP-IGD messages")
struct UPnPMessagesTests {
    static let gateway: [UInt8] = [192, 168, 11, 1]

    /// miniupnpd's device description (3,093 bytes, IGD version 2).
    static let description = [
        "<?xml version=\"1.0\"?>\r\n<root xmlns=\"urn:schemas-upnp-org:device-1-0\" configId=\"1337\"><specVersio",
        "n><major>1</major><minor>1</minor></specVersion><device><deviceType>urn:schemas-upnp-org:device:",
        "InternetGatewayDevice:2</deviceType><friendlyName>Debian router</friendlyName><manufacturer>Debi",
        "an</manufacturer><manufacturerURL>http://www.debian.org/</manufacturerURL><modelDescription>Debi",
        "an router</modelDescription><modelName>Debian router</modelName><modelNumber>1</modelNumber><mod",
        "elURL>http://www.debian.org/</modelURL><serialNumber>00000000</serialNumber><UDN>uuid:3d3cec3a-8",
        "cf0-11e0-98ee-001a6bd2d07b</UDN><serviceList><service><serviceType>urn:schemas-upnp-org:service:",
        "Layer3Forwarding:1</serviceType><serviceId>urn:upnp-org:serviceId:L3Forwarding1</serviceId><SCPD",
        "URL>/L3F.xml</SCPDURL><controlURL>/ctl/L3F</controlURL><eventSubURL>/evt/L3F</eventSubURL></serv",
        "ice><service><serviceType>urn:schemas-upnp-org:service:DeviceProtection:1</serviceType><serviceI",
        "d>urn:upnp-org:serviceId:DeviceProtection1</serviceId><SCPDURL>/DP.xml</SCPDURL><controlURL>/ctl",
        "/DP</controlURL><eventSubURL>/evt/DP</eventSubURL></service></serviceList><deviceList><device><d",
        "eviceType>urn:schemas-upnp-org:device:WANDevice:2</deviceType><friendlyName>WANDevice</friendlyN",
        "ame><manufacturer>MiniUPnP</manufacturer><manufacturerURL>http://miniupnp.free.fr/</manufacturer",
        "URL><modelDescription>WAN Device</modelDescription><modelName>WAN Device</modelName><modelNumber",
        ">20221221</modelNumber><modelURL>http://miniupnp.free.fr/</modelURL><serialNumber>00000000</seri",
        "alNumber><UDN>uuid:3d3cec3a-8cf0-11e0-98ee-001a6bd2d07c</UDN><UPC>000000000000</UPC><serviceList",
        "><service><serviceType>urn:schemas-upnp-org:service:WANCommonInterfaceConfig:1</serviceType><ser",
        "viceId>urn:upnp-org:serviceId:WANCommonIFC1</serviceId><SCPDURL>/WANCfg.xml</SCPDURL><controlURL",
        ">/ctl/CmnIfCfg</controlURL><eventSubURL>/evt/CmnIfCfg</eventSubURL></service></serviceList><devi",
        "ceList><device><deviceType>urn:schemas-upnp-org:device:WANConnectionDevice:2</deviceType><friend",
        "lyName>WANConnectionDevice</friendlyName><manufacturer>MiniUPnP</manufacturer><manufacturerURL>h",
        "ttp://miniupnp.free.fr/</manufacturerURL><modelDescription>MiniUPnP daemon</modelDescription><mo",
        "delName>MiniUPnPd</modelName><modelNumber>20221221</modelNumber><modelURL>http://miniupnp.free.f",
        "r/</modelURL><serialNumber>00000000</serialNumber><UDN>uuid:3d3cec3a-8cf0-11e0-98ee-001a6bd2d07d",
        "</UDN><UPC>000000000000</UPC><serviceList><service><serviceType>urn:schemas-upnp-org:service:WAN",
        "IPConnection:2</serviceType><serviceId>urn:upnp-org:serviceId:WANIPConn1</serviceId><SCPDURL>/WA",
        "NIPCn.xml</SCPDURL><controlURL>/ctl/IPConn</controlURL><eventSubURL>/evt/IPConn</eventSubURL></s",
        "ervice><service><serviceType>urn:schemas-upnp-org:service:WANIPv6FirewallControl:1</serviceType>",
        "<serviceId>urn:upnp-org:serviceId:WANIPv6Firewall1</serviceId><SCPDURL>/WANIP6FC.xml</SCPDURL><c",
        "ontrolURL>/ctl/IP6FCtl</controlURL><eventSubURL>/evt/IP6FCtl</eventSubURL></service></serviceLis",
        "t></device></deviceList></device></deviceList><presentationURL>http://192.168.11.1/</presentatio",
        "nURL></device></root>",
    ].joined()

    static let ssdpAnswer =
        "HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=120\r\n"
        + "ST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n"
        + "USN: uuid:3d3cec3a-8cf0-11e0-98ee-001a6bd2d07b::urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n"
        + "EXT:\r\nSERVER: Debian/6.18.44-fc-v657 UPnP/1.1 MiniUPnPd/2.3.1\r\n"
        + "LOCATION: http://192.168.11.1:43241/rootDesc.xml\r\nOPT: \"http://schemas.upnp.org/upnp/1/0/\"; ns=01\r\n"
        + "01-NLS: 1795965171\r\nBOOTID.UPNP.ORG: 1795965171\r\nCONFIGID.UPNP.ORG: 1337\r\n\r\n"

    @Test("The SSDP answer's LOCATION names the description on the gateway; a URL on another host is not followed")
    func location() throws {
        let location = try #require(UPnPMessages.header("location", in: Self.ssdpAnswer))
        #expect(location == "http://192.168.11.1:43241/rootDesc.xml")
        let url = try #require(UPnPMessages.gatewayURL(location, gateway: Self.gateway))
        #expect(url.port == 43241 && url.path == "/rootDesc.xml")
        #expect(UPnPMessages.gatewayURL("http://192.168.11.2:43241/rootDesc.xml", gateway: Self.gateway) == nil)
        #expect(UPnPMessages.gatewayURL("https://192.168.11.1/rootDesc.xml", gateway: Self.gateway) == nil)
        #expect(UPnPMessages.gatewayURL("http://router.local/rootDesc.xml", gateway: Self.gateway) == nil)
        #expect(UPnPMessages.gatewayURL("http://192.168.11.1/", gateway: Self.gateway)?.port == 80)
        #expect(UPnPMessages.gatewayURL("http://192.168.11.1:0/", gateway: Self.gateway) == nil)
    }

    @Test("The description's WAN connection service is found with its control URL (IGD 2 preferred)")
    func controlPoint() {
        let control = UPnPMessages.controlPoint(
            description: Self.description, descriptionPort: 43241, gateway: Self.gateway)
        #expect(
            control
                == UPnPMessages.ControlPoint(
                    serviceType: "urn:schemas-upnp-org:service:WANIPConnection:2", port: 43241, path: "/ctl/IPConn"))
        let version1 = Self.description.replacingOccurrences(of: "WANIPConnection:2", with: "WANIPConnection:1")
        #expect(
            UPnPMessages.controlPoint(description: version1, descriptionPort: 80, gateway: Self.gateway)?.serviceType
                == "urn:schemas-upnp-org:service:WANIPConnection:1")
        let absolute = Self.description.replacingOccurrences(
            of: "<controlURL>/ctl/IPConn", with: "<controlURL>http://192.168.11.1:5000/ctl/IPConn")
        #expect(
            UPnPMessages.controlPoint(description: absolute, descriptionPort: 43241, gateway: Self.gateway)?.port
                == 5000)
        #expect(
            UPnPMessages.controlPoint(description: "<root></root>", descriptionPort: 80, gateway: Self.gateway) == nil)
    }

    @Test("HTTP responses: Content-Length, chunked, and not HTTP at all")
    func responses() throws {
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nConnection: close\r\n"
            + "Content-Length: 3093\r\nServer: Debian/6.18.44-fc-v657 UPnP/1.1 MiniUPnPd/2.3.1\r\nExt:\r\n\r\n"
        let response = try #require(UPnPMessages.parseResponse(Array((head + Self.description).utf8)))
        #expect(response.status == 200 && response.body == Self.description)
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n"
        #expect(UPnPMessages.parseResponse(Array(chunked.utf8))?.body == "hello world")
        let overrun = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\nhello\r\n"
        #expect(UPnPMessages.parseResponse(Array(overrun.utf8)) == nil)
        #expect(UPnPMessages.parseResponse(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)) == nil)
        // Signed lengths a hostile host could send (Int parses the sign): refused, never a range running backwards.
        let negativeLength = "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nabc"
        #expect(UPnPMessages.parseResponse(Array(negativeLength.utf8)) == nil)
        let negativeChunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nhello\r\n0\r\n\r\n"
        #expect(UPnPMessages.parseResponse(Array(negativeChunk.utf8)) == nil)
        let short = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"
        #expect(UPnPMessages.parseResponse(Array(short.utf8)) == nil)
    }

    @Test("SOAP: miniupnpd's GetExternalIPAddress answer and its 718 fault are read; a request is well formed")
    func soap() throws {
        let answer =
            "<?xml version=\"1.0\"?>\r\n<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" "
            + "s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body><u:GetExternalIPAddressResponse "
            + "xmlns:u=\"urn:schemas-upnp-org:service:WANIPConnection:2\"><NewExternalIPAddress>198.20.0.11"
            + "</NewExternalIPAddress></u:GetExternalIPAddressResponse></s:Body></s:Envelope>\r\n"
        #expect(UPnPMessages.element("NewExternalIPAddress", in: answer) == "198.20.0.11")
        #expect(UPnPMessages.errorCode(in: answer) == nil)
        let fault =
            "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" "
            + "s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body><s:Fault><faultcode>s:Client"
            + "</faultcode><faultstring>UPnPError</faultstring><detail><UPnPError "
            + "xmlns=\"urn:schemas-upnp-org:control-1-0\"><errorCode>718</errorCode><errorDescription>"
            + "ConflictInMappingEntry</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>\r\n"
        #expect(UPnPMessages.errorCode(in: fault) == 718)
        let control = UPnPMessages.ControlPoint(
            serviceType: "urn:schemas-upnp-org:service:WANIPConnection:2", port: 43241, path: "/ctl/IPConn")
        let request = UPnPMessages.soapRequest(
            "DeletePortMapping", arguments: [("NewExternalPort", "7000"), ("NewProtocol", "UDP")], control: control,
            gateway: Self.gateway)
        #expect(request.hasPrefix("POST /ctl/IPConn HTTP/1.1\r\nHost: 192.168.11.1:43241\r\n"))
        #expect(request.contains("SOAPAction: \"urn:schemas-upnp-org:service:WANIPConnection:2#DeletePortMapping\""))
        let body = try #require(request.components(separatedBy: "\r\n\r\n").last)
        #expect(UPnPMessages.header("Content-Length", in: request) == "\(body.utf8.count)")
        #expect(UPnPMessages.element("NewExternalPort", in: body) == "7000")
    }

    @Test(
        "The merged report: UPnP's mapping wins, then PCP's; a failure only once both gave up, an answer over silence")
    func mergedReport() {
        let pcpGateway = NetworkAddress(ipv4: 192, 168, 11, 1, port: 5351)
        let upnpGateway = NetworkAddress(ipv4: 192, 168, 11, 1, port: 1900)
        let mapped = NetworkAddress(ipv4: 198, 20, 0, 11, port: 7000)
        let pending = PortMapping(gateway: pcpGateway)
        let pcpMapped = PortMapping(gateway: pcpGateway, externalAddress: mapped, mappingProtocol: .pcp)
        let upnpMapped = PortMapping(gateway: upnpGateway, externalAddress: mapped, mappingProtocol: .upnp)
        let pcpSilent = PortMapping(gateway: pcpGateway, failure: .unanswered)
        let upnpSilent = PortMapping(gateway: upnpGateway, failure: .unanswered)
        let upnpRefused = PortMapping(gateway: upnpGateway, failure: .refused(.upnp, resultCode: 606))
        #expect(PortMappingReport.merge(endpoint: [pcpMapped], upnp: [upnpSilent]) == [pcpMapped])
        #expect(PortMappingReport.merge(endpoint: [pcpSilent], upnp: [upnpMapped]) == [upnpMapped])
        #expect(PortMappingReport.merge(endpoint: [pcpSilent], upnp: []) == [pcpSilent])
        #expect(PortMappingReport.merge(endpoint: [pending], upnp: [upnpSilent]) == [pending])
        #expect(PortMappingReport.merge(endpoint: [pcpSilent], upnp: [upnpSilent]) == [pcpSilent])
        #expect(PortMappingReport.merge(endpoint: [pcpSilent], upnp: [upnpRefused]) == [upnpRefused])
        let other = PortMapping(gateway: NetworkAddress(ipv4: 10, 0, 0, 1, port: 5351), failure: .unanswered)
        #expect(PortMappingReport.merge(endpoint: [pcpMapped, other], upnp: []) == [pcpMapped, other])
    }
}
