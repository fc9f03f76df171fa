import Huddle
import HuddleWire

/// What `huddle doctor` found about this network from STUN: the answers, the NAT's mapping and filtering
/// behaviour (RFC 4787 terms, tested as RFC 5780 describes), and how large a datagram reached a server.
struct NatReport {
    /// One STUN server's answer to a plain Binding request.
    struct ServerAnswer {
        var server: NetworkAddress
        var mapped: NetworkAddress?
        var rtt: Duration?
        /// Whether it named an OTHER-ADDRESS (it can run RFC 5780's tests).
        var supportsBehaviourTests: Bool
    }

    var local: NetworkAddress
    var servers: [ServerAnswer] = []
    /// `no NAT`, `endpoint-independent`, `address-dependent`, `address-and-port-dependent` or `unknown`.
    var mapping = "unknown"
    /// `endpoint-independent`, `address-dependent`, `address-and-port-dependent` or `unknown`.
    var filtering = "unknown"
    /// The server the datagram sizes were probed toward, the largest that got an answer, and the largest probed.
    var mtuServer: NetworkAddress?
    var mtuBytes: Int?
    static let probedSizes = [576, 1280, 1400, 1500, 9000]

    /// The reflexive addresses the servers reported, each once.
    var reflexive: [NetworkAddress] {
        var seen: [NetworkAddress] = []
        for case let mapped? in servers.map(\.mapped) where !seen.contains(mapped) { seen.append(mapped) }
        return seen
    }

    /// Runs every STUN test against `targets` from `host` (IPv4) and returns what they showed. Blocking: at most
    /// about 2.2 s when no server answers (0.8 s for the plain requests, 0.7 s for the mapping and size probes, 0.7 s
    /// for the filtering probes on a socket of their own).
    static func probe(_ targets: [NetworkAddress], from host: String, port: UInt16) throws(DoctorError) -> NatReport {
        let socket = try DoctorSocket(host: host, port: port)
        let probe = StunProbe(socket: socket)
        var report = NatReport(local: socket.localAddress)
        let basic = probe.transact(targets.map { ($0, []) }, budget: .milliseconds(800))
        report.servers = targets.indices.map { index in
            ServerAnswer(
                server: targets[index], mapped: basic[index]?.mapped, rtt: basic[index]?.rtt,
                supportsBehaviourTests: basic[index]?.other != nil)
        }
        guard let first = targets.indices.first(where: { basic[$0]?.mapped != nil }) else { return report }
        let primary = targets[first]
        let primaryMapped = basic[first]!.mapped!

        // Mapping (RFC 5780 4.3): the alternate IP with the primary port, then the alternate address; and the
        // datagram sizes, toward the primary.
        var requests: [(to: NetworkAddress, attributes: [StunAttribute])] = []
        let rfc5780 = targets.indices.first { basic[$0]?.other != nil }
        var alternate: (server: NetworkAddress, other: NetworkAddress)?
        if let rfc5780, let other = basic[rfc5780]?.other, other.family == .ipv4 {
            alternate = (targets[rfc5780], other)
            let otherIPPrimaryPort = NetworkAddress(
                ipv4: other.addressBytes[0], other.addressBytes[1], other.addressBytes[2], other.addressBytes[3],
                port: targets[rfc5780].port)
            requests += [(otherIPPrimaryPort, []), (other, [])]
        }
        let sizes = probedSizes
        requests += sizes.map { (primary, [StunProbe.pad(to: $0 - 28)]) }
        let more = probe.transact(requests, budget: .milliseconds(700))
        report.mtuServer = primary
        let sizeOffset = alternate == nil ? 0 : 2
        report.mtuBytes = sizes.indices.filter { more[sizeOffset + $0] != nil }.map { sizes[$0] }.max()

        let mappedBy5780 = alternate.flatMap { alternate -> NetworkAddress? in
            targets.indices.first { targets[$0] == alternate.server }.flatMap { basic[$0]?.mapped }
        }
        if let mappedBy5780, let second = more[0]?.mapped {
            if second == mappedBy5780 {
                report.mapping = "endpoint-independent"
            } else if let third = more[1]?.mapped {
                report.mapping = third == second ? "address-dependent" : "address-and-port-dependent"
            }
        } else {
            // Without RFC 5780: servers at different IPs that saw the same address mean endpoint-independent
            // mapping; different addresses mean the mapping depends at least on the destination's address.
            let mapped = report.servers.filter { $0.mapped != nil }
            if Set(mapped.map { $0.server.addressBytes }).count >= 2 {
                report.mapping =
                    Set(mapped.compactMap(\.mapped)).count == 1 ? "endpoint-independent" : "address-dependent"
            }
        }
        if primaryMapped.port == socket.localAddress.port,
            DoctorSocket.sourceIP(toward: primary) == primaryMapped.addressBytes
        {
            report.mapping = "no NAT"
        }

        // Filtering (RFC 5780 4.4), on a fresh socket whose mapping has met only the primary: an answer from the
        // other IP passes only endpoint-independent filtering; one from the other port only address-dependent or
        // looser.
        if let alternate {
            let fresh = try DoctorSocket(host: host, port: 0)
            let answers = StunProbe(socket: fresh).transact(
                [(alternate.server, [StunProbe.change(ip: true)]), (alternate.server, [StunProbe.change(ip: false)])],
                budget: .milliseconds(700))
            report.filtering =
                answers[0] != nil
                ? "endpoint-independent" : answers[1] != nil ? "address-dependent" : "address-and-port-dependent"
        }
        return report
    }
}
