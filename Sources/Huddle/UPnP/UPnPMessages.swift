/// The text UPnP-IGD speaks (UPnP Device Architecture 1.1 and the WANIPConnection service), built and read as
/// plain strings: SSDP headers, HTTP responses, the device description's services, and SOAP requests and answers.
/// Pure functions, so each is tested on a router's real bytes; ``UPnPExchange`` moves them.
enum UPnPMessages {
    /// The WAN connection services a port can be mapped on, preferred first.
    static let serviceTypes = [
        "urn:schemas-upnp-org:service:WANIPConnection:2", "urn:schemas-upnp-org:service:WANIPConnection:1",
        "urn:schemas-upnp-org:service:WANPPPConnection:1",
    ]

    /// Where to send SOAP requests: the service type and the control URL's port and path on the gateway.
    struct ControlPoint: Sendable, Equatable {
        var serviceType: String
        var port: UInt16
        var path: String
    }

    /// The value of header `name` (any case) in an SSDP or HTTP message's text.
    static func header(_ name: String, in message: String) -> String? {
        for line in message.split(separator: "\r\n", omittingEmptySubsequences: false).dropFirst() {
            if line.isEmpty { return nil }
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].trimmingWhitespace().lowercased() == name.lowercased() {
                return String(line[line.index(after: colon)...].trimmingWhitespace())
            }
        }
        return nil
    }

    /// An HTTP/1.1 response read to the end of the connection: the status code and the body (by Content-Length,
    /// chunked, or up to the end); nil when it is not HTTP.
    static func parseResponse(_ bytes: [UInt8]) -> UPnPExchange.Response? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.firstRange(of: separator) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else { return nil }
        var body = Array(bytes[end.upperBound...])
        if header("Transfer-Encoding", in: head + "\r\n")?.lowercased() == "chunked" {
            guard let decoded = dechunk(body) else { return nil }
            body = decoded
        } else if let length = header("Content-Length", in: head + "\r\n").flatMap({ Int($0) }) {
            guard length >= 0, length <= body.count else { return nil }
            body = Array(body.prefix(length))
        }
        return UPnPExchange.Response(status: status, body: String(decoding: body, as: UTF8.self))
    }

    /// A chunked body's data; nil when the chunks overrun the bytes.
    static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
        var data: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = bytes[index...].firstRange(of: [13, 10]) else { return nil }
            let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self)
            // `Int(_:radix:)` takes a sign too: "-1" must not become a range running backwards.
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16), size >= 0 else { return nil }
            if size == 0 { return data }
            let start = lineEnd.upperBound
            guard size <= bytes.count - start else { return nil }
            data += bytes[start..<start + size]
            index = start + size + 2
        }
        return data
    }

    /// The port and path of `location` when it is an `http://` URL on `gateway` (an IPv4 literal); nil for any
    /// other host: the description is fetched only from the router the node routes through.
    static func gatewayURL(_ location: String, gateway: [UInt8]) -> (port: UInt16, path: String)? {
        guard location.lowercased().hasPrefix("http://") else { return nil }
        let rest = location.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        let hostPort = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard hostPort.count <= 2 else { return nil }
        let octets = hostPort[0].split(separator: ".").compactMap { UInt8($0) }
        guard octets == gateway, octets.count == 4 else { return nil }
        let port = hostPort.count == 2 ? UInt16(hostPort[1]) : 80
        guard let port, port != 0 else { return nil }
        return (port, path.isEmpty ? "/" : String(path))
    }

    /// The preferred WAN connection service in a device description, with its control URL resolved against the
    /// description's own port (an absolute control URL must name the gateway too).
    static func controlPoint(description: String, descriptionPort: UInt16, gateway: [UInt8]) -> ControlPoint? {
        let services = description.components(separatedBy: "<service>").dropFirst().map {
            $0.components(separatedBy: "</service>")[0]
        }
        for wanted in serviceTypes {
            guard let service = services.first(where: { element("serviceType", in: $0) == wanted }),
                let control = element("controlURL", in: service)
            else { continue }
            if control.hasPrefix("/") {
                return ControlPoint(serviceType: wanted, port: descriptionPort, path: control)
            }
            if let absolute = gatewayURL(control, gateway: gateway) {
                return ControlPoint(serviceType: wanted, port: absolute.port, path: absolute.path)
            }
            return ControlPoint(serviceType: wanted, port: descriptionPort, path: "/" + control)
        }
        return nil
    }

    /// The text of the first element `name` (any namespace prefix) in `xml`.
    static func element(_ name: String, in xml: String) -> String? {
        var searchFrom = xml.startIndex
        while let open = xml.range(of: "<", range: searchFrom..<xml.endIndex) {
            guard let close = xml.range(of: ">", range: open.upperBound..<xml.endIndex) else { return nil }
            let tag = xml[open.upperBound..<close.lowerBound]
            let local = tag.split(separator: ":").last.map(String.init) ?? ""
            if !tag.hasPrefix("/"), local.split(separator: " ").first.map(String.init) == name {
                guard let end = xml.range(of: "</", range: close.upperBound..<xml.endIndex) else { return nil }
                return String(xml[close.upperBound..<end.lowerBound].trimmingWhitespace())
            }
            searchFrom = close.upperBound
        }
        return nil
    }

    /// A SOAP request for `action` of `control`'s service, with `arguments` in order, to the gateway.
    static func soapRequest(
        _ action: String, arguments: [(String, String)], control: ControlPoint, gateway: [UInt8]
    ) -> String {
        let values = arguments.map { "<\($0.0)>\($0.1)</\($0.0)>" }.joined()
        let body =
            "<?xml version=\"1.0\"?>\r\n<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" "
            + "s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body><u:\(action) "
            + "xmlns:u=\"\(control.serviceType)\">\(values)</u:\(action)></s:Body></s:Envelope>\r\n"
        let host = gateway.map(String.init).joined(separator: ".")
        return "POST \(control.path) HTTP/1.1\r\nHost: \(host):\(control.port)\r\n"
            + "Content-Type: text/xml; charset=\"utf-8\"\r\nSOAPAction: \"\(control.serviceType)#\(action)\"\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    /// A GET of `path` on the gateway.
    static func getRequest(_ path: String, port: UInt16, gateway: [UInt8]) -> String {
        let host = gateway.map(String.init).joined(separator: ".")
        return "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n"
    }

    /// The UPnP error code of a SOAP fault (`<errorCode>718</errorCode>`), if the body is one.
    static func errorCode(in body: String) -> Int? {
        element("errorCode", in: body).flatMap { Int($0) }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and line breaks.
    fileprivate func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        let text = Substring(self)
        guard let first = text.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = text.lastIndex(where: { !isSpace($0) })!
        return text[first...last]
    }
}
