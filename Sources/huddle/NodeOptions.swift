import ArgumentParser
import Foundation
import Huddle
import HuddleCrypto
import Logging
import Prometheus

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Options every command that runs a node takes.
struct NodeOptions: ParsableArguments {
    @Option(
        help:
            "Address to listen on, HOST:PORT ([IPv6]:PORT for IPv6; a bare PORT: on 127.0.0.1; port 0 picks a free one)."
    )
    var listen: String = "127.0.0.1:0"

    @Option(
        help: ArgumentHelp(
            "Address tickets and other members reach this node at, HOST:PORT (port 0: the listening port).",
            discussion: "Repeat it or separate addresses with commas for several (at most 8), best first: a ticket "
                + "names this node at the first. Default: the --listen address; when listening on 0.0.0.0 or [::], "
                + "this machine's non-loopback interface addresses, then loopback.",
            valueName: "host:port"))
    var advertise: [String] = []

    @Option(
        help: ArgumentHelp(
            "Path of the identity file (created with mode 0600 if missing).",
            discussion: "Default: the name's own, ~/.huddle/identities/NAME (so a name keeps its identity from run to "
                + "run), or when another running huddle process holds it the first free NAME-2 ... -8 (so two "
                + "terminals on one machine are two participants).",
            valueName: "path"))
    var identity: String?

    @Option(help: "Display name other participants see; each name keeps its own identity (see --identity).")
    var name: String = NodeOptions.defaultName

    @Option(
        help: ArgumentHelp(
            "Directory for shared attachments (one subdirectory per session, deleted on leaving it).",
            discussion: "By default a new temporary directory, deleted when the node stops. Keep a directory to "
                + "resume interrupted downloads after a crash."))
    var dataDir: String?

    @Flag(help: "Print one JSON object per line on standard output instead of text for people.")
    var json = false

    @Flag(help: "At the end of standard input keep running until SIGINT or SIGTERM (then leave gracefully).")
    var stay = false

    @Option(
        help: ArgumentHelp(
            "A relay (huddle relay) to register with, HOST:PORT; repeat for several (at most 4).",
            discussion: "Members behind NATs reach each other through it until hole punching finds a direct path, "
                + "and stay on it when none exists. Tickets this node writes name its relays.",
            valueName: "host:port"))
    var relay: [String] = []

    @Option(
        help: ArgumentHelp(
            "A TURN server to allocate on, USER:PASSWORD@HOST:PORT[?transport=tcp] (coturn, hosted TURN); repeat "
                + "for four at most.",
            discussion: "Peers reach this node at the relayed address the server grants, which tickets then name "
                + "first; hole punching still moves peers that can reach it directly to a direct path. A server "
                + "given with ?transport=tcp alongside a UDP one is the fallback for networks that block UDP (port "
                + "443 passes most firewalls): it is used only when UDP gets no allocation within 2 s.",
            valueName: "user:password@host:port"))
    var turn: [String] = []

    @Option(
        help: ArgumentHelp(
            "A STUN server to ask where it sees this node, HOST:PORT; repeat for four at most.",
            discussion: "The public address it reports is offered for hole punching and advertised (tickets name it "
                + "after any TURN address and before the interface addresses).",
            valueName: "host:port"))
    var stun: [String] = []

    @Flag(
        help: ArgumentHelp(
            "Put the --turn servers, with their credentials, in the tickets this node writes.",
            discussion: "Joiners without a TURN server of their own (behind a firewall that blocks UDP, or a "
                + "symmetric NAT) then allocate on them too. Whoever holds such a ticket can use those credentials."))
    var shareTurn = false

    @Flag(
        help: ArgumentHelp(
            "Do not ask the home router to forward a public port to this node (PCP, NAT-PMP, UPnP-IGD).",
            discussion: "By default a node listening on 0.0.0.0 behind a router (reached from a private address) asks "
                + "it for a mapping, advertises the public address first and deletes the mapping when it stops; "
                + "peers behind any NAT then reach it directly."))
    var noPortMapping = false

    @Flag(
        help: ArgumentHelp(
            "Do not relay for the session's other members, nor ask them to relay for this node.",
            discussion: "By default two members that cannot reach each other directly (both behind symmetric NATs) "
                + "talk through a third member both reach, at most 2 MiB/s each; it forwards sealed packets and sees "
                + "no content."))
    var noMemberRelay = false

    @Option(help: "Congestion controller: bbr (default; keeps its rate under random loss), cubic or newreno.")
    var congestion: HuddleNode.CongestionControl = .bbr

    @OptionGroup var pathMTU: PathMTUOption

    @Option(
        help: ArgumentHelp(
            "Serve the node's metrics for Prometheus at http://HOST:PORT/metrics (a bare PORT: on 127.0.0.1).",
            discussion: "Counters of datagrams, handshakes, messages, losses and delivery failures; gauges of "
                + "connections, participants and congestion windows; RTT and join-time histograms (README, "
                + "\"Metrics\"). Loopback unless a host is given: the figures say who talks how much.",
            valueName: "host:port"))
    var metrics: String?

    @Option(help: "Diagnostics level on standard error: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "warning"

    /// The user's login name (`USER`, `LOGNAME`), else the host name, else `huddler`.
    static var defaultName: String {
        for variable in ["USER", "LOGNAME"] {
            if let value = getenv(variable).map({ String(cString: $0) }), !value.isEmpty { return value }
        }
        var host = [CChar](repeating: 0, count: 256)
        if gethostname(&host, host.count - 1) == 0 {
            let name = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !name.isEmpty { return name }
        }
        return "huddler"
    }

    /// The listen address split into host and port.
    func hostAndPort() throws -> (host: String, port: Int) {
        // A bare port listens on loopback, as --metrics does: reaching other machines is a choice (0.0.0.0:PORT).
        if let port = Int(listen), (0...65535).contains(port) { return ("127.0.0.1", port) }
        return try Self.split(listen, option: "--listen")
    }

    /// Splits `HOST:PORT` (`[IPv6]:PORT` for IPv6) given as `option`; an empty host means every IPv4 address.
    static func split(_ address: String, option: String) throws -> (host: String, port: Int) {
        let text = address.trimmingCharacters(in: .whitespaces)
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ValidationError("\(option) \(address): expected [IPv6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ValidationError("\(option) \(address): expected HOST:PORT")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw ValidationError("\(option) \(address): the port must be 0-65535")
        }
        return (host.isEmpty ? "0.0.0.0" : String(host), port)
    }

    /// The `--advertise` addresses, in order (commas separate several within one option).
    func advertisedAddresses() throws -> [NetworkAddress] {
        let texts = advertise.flatMap { $0.split(separator: ",").map(String.init) }
        guard texts.count <= HuddleNode.maxAdvertisedAddresses else {
            throw ValidationError(
                "--advertise: \(texts.count) addresses; at most \(HuddleNode.maxAdvertisedAddresses) are allowed")
        }
        return try texts.map { text in
            let (host, port) = try Self.split(text, option: "--advertise")
            guard let address = Self.networkAddress(host: host, port: port) else {
                throw ValidationError("--advertise \(text): the host must be an IPv4 or IPv6 address")
            }
            return address
        }
    }

    /// The `--relay` addresses.
    func relayAddresses() throws -> [NetworkAddress] {
        try Self.serverAddresses(relay, option: "--relay", limit: HuddleNode.maxRelays)
    }

    /// The `--stun` servers.
    func stunServers() throws -> [NetworkAddress] {
        try Self.serverAddresses(stun, option: "--stun", limit: HuddleNode.maxStunServers)
    }

    /// The HOST:PORT values of a repeated server `option` (`--relay`, `--stun`), at most `limit`.
    static func serverAddresses(_ texts: [String], option: String, limit: Int) throws -> [NetworkAddress] {
        guard texts.count <= limit else {
            throw ValidationError("\(option): \(texts.count) servers; at most \(limit) are allowed")
        }
        return try texts.map { text in
            let (host, port) = try split(text, option: option)
            guard port != 0, let address = networkAddress(host: host, port: port) else {
                throw ValidationError("\(option) \(text): give an IPv4 or IPv6 address and a port other than 0")
            }
            return address
        }
    }

    /// The `--turn` servers.
    func turnServers() throws -> [TurnServer] {
        guard turn.count <= HuddleNode.maxTurnServers else {
            throw ValidationError("--turn: \(turn.count) servers; at most \(HuddleNode.maxTurnServers) are allowed")
        }
        return try turn.map(Self.turnServer)
    }

    /// One `--turn` value, USER:PASSWORD@HOST:PORT[?transport=udp|tcp], as a server.
    static func turnServer(_ text: String) throws -> TurnServer {
        guard let at = text.lastIndex(of: "@"), let colon = text[..<at].firstIndex(of: ":") else {
            throw ValidationError("--turn \(text): give USER:PASSWORD@HOST:PORT[?transport=tcp]")
        }
        var location = String(text[text.index(after: at)...])
        var transport = TurnTransport.udp
        if let query = location.firstIndex(of: "?") {
            let parameter = location[location.index(after: query)...]
            guard parameter.hasPrefix("transport="),
                let chosen = TurnTransport(rawValue: String(parameter.dropFirst("transport=".count)))
            else {
                throw ValidationError("--turn \(text): the only parameter is ?transport=udp or ?transport=tcp")
            }
            transport = chosen
            location = String(location[..<query])
        }
        let (host, port) = try Self.split(location, option: "--turn")
        guard port != 0, let address = Self.networkAddress(host: host, port: port) else {
            throw ValidationError("--turn \(text): give an IPv4 or IPv6 address and a port other than 0")
        }
        return TurnServer(
            address: address, transport: transport,
            credentials: TurnCredentials(
                username: String(text[..<colon]), password: String(text[text.index(after: colon)..<at])))
    }

    /// `host` (an IPv4 or IPv6 literal) and `port` as an address; `nil` for anything else (names are not resolved:
    /// a ticket must name an address that means the same thing on every machine).
    static func networkAddress(host: String, port: Int) -> NetworkAddress? {
        var ipv4 = in_addr()
        if inet_pton(AF_INET, host, &ipv4) == 1 {
            let bytes = withUnsafeBytes(of: ipv4) { Array($0) }
            return NetworkAddress(ipv4: bytes[0], bytes[1], bytes[2], bytes[3], port: UInt16(port))
        }
        var ipv6 = in6_addr()
        if inet_pton(AF_INET6, host, &ipv6) == 1 {
            return NetworkAddress(ipv6: withUnsafeBytes(of: ipv6) { Array($0) }, port: UInt16(port))
        }
        return nil
    }

    /// A started node and the identity file it holds.
    struct Started {
        /// The node.
        var node: HuddleNode
        /// Its identity file.
        var identityPath: String
        /// The `--metrics` server, if one was asked for.
        var metricsServer: MetricsServer?
    }

    /// The `--metrics` address: `HOST:PORT`, or a bare port on loopback.
    func metricsAddress() throws -> (host: String, port: Int)? {
        guard let metrics else { return nil }
        if let port = Int(metrics), (0...65535).contains(port) { return ("127.0.0.1", port) }
        return try Self.split(metrics, option: "--metrics")
    }

    /// Loads (or creates) the identity and starts a node.
    func startNode() async throws -> Started {
        let (host, port) = try hostAndPort()
        let advertised = try advertisedAddresses()
        let held: IdentityStore.Held
        do {
            held = try IdentityStore.acquire(explicitPath: identity, name: name)
        } catch {
            throw CLIError(IdentityStore.describe(error, path: identity ?? IdentityStore.path(forName: name)))
        }
        if held.created { StandardError.write("created identity \(held.path)") }
        if held.shared {
            StandardError.write(
                "note: \(held.path) is also held by another running huddle process; nodes sharing an identity cannot "
                    + "meet (give each its own with --identity PATH)")
        }
        if identity == nil && held.path != IdentityStore.path(forName: name) {
            StandardError.write(
                "note: \(IdentityStore.path(forName: name)) is held by another running huddle process named \"\(name)\"; "
                    + "this one is \(held.path) (a --name of its own, or --identity PATH, chooses)")
        }
        var logger = Logger(label: "huddle")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        var configuration = HuddleNode.Configuration(
            identity: held.identity, name: name, host: host, port: port, logger: logger)
        configuration.advertisedAddresses = advertised
        configuration.relays = try relayAddresses()
        configuration.turnServers = try turnServers()
        configuration.shareTurnServers = shareTurn
        configuration.stunServers = try stunServers()
        configuration.portMapping = !noPortMapping
        configuration.relaysForMembers = !noMemberRelay
        configuration.congestionControl = congestion
        pathMTU.apply(to: &configuration)
        configuration.dataDirectory = dataDir.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        guard let (metricsHost, metricsPort) = try metricsAddress() else {
            return Started(node: try await HuddleNode.start(configuration), identityPath: held.path)
        }
        // A registry of this node's own, handed to the node (no process-wide bootstrap needed).
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Round trips start at tens of microseconds on a LAN; Prometheus' default buckets start at 5 ms.
        factory.durationHistogramBuckets["huddle_rtt_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1),
        ]
        configuration.metricsFactory = factory
        let node = try await HuddleNode.start(configuration)
        do {
            let server = try await MetricsServer.start(
                host: metricsHost, port: metricsPort, registry: registry, refresh: { await node.updateMetrics() })
            return Started(node: node, identityPath: held.path, metricsServer: server)
        } catch {
            await node.shutdown()
            throw CLIError("--metrics \(metrics ?? ""): \(error)")
        }
    }
}

extension HuddleNode.CongestionControl: ExpressibleByArgument {}
