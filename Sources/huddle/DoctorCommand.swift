import ArgumentParser
import Foundation
import Huddle
import HuddleCrypto

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// `huddle doctor`: what this network lets a node do, in under 3 s.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check this network: NAT mapping and filtering, reflexive addresses, which STUN and TURN servers "
            + "and relays answer (TURN over UDP and TCP), and how large a datagram gets through.",
        discussion: """
            Asks each --stun server (and each --turn server, which answers STUN too) where it sees this machine, \
            and classifies the NAT as RFC 4787 does: mapping (endpoint-independent, address-dependent, \
            address-and-port-dependent, or no NAT) and filtering (which needs a server with two addresses that \
            supports RFC 5780, such as coturn given two --listening-ip; otherwise unknown). Allocates on each \
            --turn server over UDP and over TCP, registers with each --relay (huddle relay), and sends padded \
            requests of 576 to 9000 bytes with the \
            don't-fragment bit to find the largest that arrives. Asks the home router for a port mapping (PCP, \
            NAT-PMP, UPnP-IGD) and deletes it again. Probes over IPv4. Exits 1 when no server answered at all.

            Examples:
              huddle doctor --stun 198.51.100.4:3478 --stun 203.0.113.9:3478
              huddle doctor --turn USER:PASSWORD@198.51.100.4:3478 --json
            """)

    @Option(
        help: ArgumentHelp(
            "A STUN server to ask, HOST:PORT; two at different addresses tell the NAT's mapping.",
            valueName: "host:port"))
    var stun: [String] = []

    @Option(
        help: ArgumentHelp(
            "A TURN server, USER:PASSWORD@HOST:PORT: allocated on over UDP and over TCP, and asked as a STUN server.",
            valueName: "user:password@host:port"))
    var turn: [String] = []

    @Option(help: ArgumentHelp("A huddle relay to register with, HOST:PORT.", valueName: "host:port"))
    var relay: [String] = []

    @Option(help: "The IPv4 address (and port) to probe from, HOST[:PORT].")
    var listen: String = "0.0.0.0:0"

    @Flag(help: "Print one JSON object (a doctor event) instead of text for people.")
    var json = false

    /// How long a TURN allocation may take before it counts as not answering.
    static let turnBudget: Duration = .milliseconds(1500)

    /// One relay registration attempt: confirmed, and how long it took.
    struct RelayCheck: Sendable {
        var relay: NetworkAddress
        var elapsed: Duration?
    }

    /// One TURN allocation attempt.
    struct TurnCheck: Sendable {
        var server: NetworkAddress
        var transport: TurnTransport
        var relayed: NetworkAddress?
        var elapsed: Duration?
        var error: String?
    }

    func run() async throws {
        let output = EventOutput(json: json)
        let stunServers = try NodeOptions.serverAddresses(stun, option: "--stun", limit: HuddleNode.maxStunServers)
        let turnServers = try turn.map(NodeOptions.turnServer)
        let relays = try NodeOptions.serverAddresses(relay, option: "--relay", limit: HuddleNode.maxRelays)
        guard !stunServers.isEmpty || !turnServers.isEmpty || !relays.isEmpty else {
            throw ValidationError("give at least one --stun, --turn or --relay server to ask")
        }
        let (host, port) = listen.contains(":") ? try NodeOptions.split(listen, option: "--listen") : (listen, 0)
        let clock = ContinuousClock()
        let started = clock.now

        // Every TURN server over both transports, each on a node of its own, while the STUN probes run.
        var attempts: [TurnServer] = []
        for server in turnServers {
            for transport in [TurnTransport.udp, .tcp] {
                var attempt = server
                attempt.transport = transport
                if !attempts.contains(attempt) { attempts.append(attempt) }
            }
        }
        async let turnChecks = Self.checkTurn(attempts, host: host)
        async let relayChecks = Self.checkRelays(relays, host: host)
        async let portMappings = Self.checkPortMapping(host: host)
        var targets = stunServers
        for server in turnServers where !targets.contains(server.address) { targets.append(server.address) }
        let report: NatReport
        let probed = targets
        do {
            report = try await Self.onThread { () throws(DoctorError) in
                try NatReport.probe(probed, from: host, port: UInt16(clamping: port))
            }
        } catch {
            output.error(code: "doctor-failed", "\(error)")
            throw ExitCode(1)
        }
        let checks = await turnChecks
        let registrations = await relayChecks
        let mappings = await portMappings
        output.doctor(
            report, turn: checks, relays: registrations, portMappings: mappings, elapsed: clock.now - started)
        if report.reflexive.isEmpty && !checks.contains(where: { $0.relayed != nil })
            && !registrations.contains(where: { $0.elapsed != nil })
        {
            throw ExitCode(1)
        }
    }

    /// Runs `body` on a thread of its own (it blocks on a socket) and returns its result.
    static func onThread<Result: Sendable>(
        _ body: @escaping @Sendable () throws(DoctorError) -> Result
    ) async throws(DoctorError) -> Result {
        let result: Swift.Result<Result, DoctorError> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                do throws(DoctorError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// How long the port-mapping check waits for the routers (PCP, NAT-PMP and UPnP-IGD are asked at once; a router
    /// that answers none is reported as not answering within it).
    static let portMappingBudget: Duration = .milliseconds(2500)

    /// Asks the home routers for a port mapping from a node of its own (bound to `host`), as a node would, and
    /// deletes it again when the node stops; each router's answer within ``portMappingBudget``. Empty when the
    /// machine reaches no router from a private address.
    static func checkPortMapping(host: String) async -> [PortMapping] {
        var random = SystemRandomGenerator()
        var configuration = HuddleNode.Configuration(
            identity: Identity(using: &random), name: "doctor", host: host, port: 0)
        // An address of its own, so start does not wait for the mapping: this check does.
        configuration.advertisedAddresses = [NetworkAddress(ipv4: 127, 0, 0, 1, port: 9)]
        guard let node = try? await HuddleNode.start(configuration) else { return [] }
        let settled = await withTaskGroup(of: [PortMapping]?.self) { group in
            group.addTask {
                for await mappings in node.portMappingChanges() where mappings.allSatisfy(\.isSettled) {
                    return mappings
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: portMappingBudget)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let current = await node.portMappings()
        let mappings = settled ?? current
        await node.shutdown()
        return mappings
    }

    /// Registers with every relay of `relays` from one node (bound to `host`), waiting at most ``turnBudget``; each
    /// confirmed registration with the time it took.
    static func checkRelays(_ relays: [NetworkAddress], host: String) async -> [RelayCheck] {
        guard !relays.isEmpty else { return [] }
        var checks = relays.map { RelayCheck(relay: $0) }
        var random = SystemRandomGenerator()
        var configuration = HuddleNode.Configuration(
            identity: Identity(using: &random), name: "doctor", host: host, port: 0)
        configuration.relays = relays
        configuration.advertisedAddresses = [NetworkAddress(ipv4: 127, 0, 0, 1, port: 9)]
        configuration.portMapping = false
        let clock = ContinuousClock()
        let started = clock.now
        guard let node = try? await HuddleNode.start(configuration) else { return checks }
        while clock.now - started < turnBudget, checks.contains(where: { $0.elapsed == nil }) {
            for registration in await node.relayRegistrations() where registration.isRegistered {
                if let index = checks.firstIndex(where: { $0.relay == registration.relay && $0.elapsed == nil }) {
                    checks[index].elapsed = clock.now - started
                }
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        await node.shutdown()
        return checks
    }

    /// Allocates on each of `servers` from a node of its own (bound to `host`), all at once, each for at most
    /// ``turnBudget``.
    static func checkTurn(_ servers: [TurnServer], host: String) async -> [TurnCheck] {
        await withTaskGroup(of: (Int, TurnCheck).self) { group in
            for (index, server) in servers.enumerated() {
                group.addTask { (index, await checkTurn(server, host: host)) }
            }
            var checks: [(Int, TurnCheck)] = []
            for await check in group { checks.append(check) }
            return checks.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    private static func checkTurn(_ server: TurnServer, host: String) async -> TurnCheck {
        var check = TurnCheck(server: server.address, transport: server.transport)
        var random = SystemRandomGenerator()
        var configuration = HuddleNode.Configuration(
            identity: Identity(using: &random), name: "doctor", host: host, port: 0)
        configuration.turnServers = [server]
        // An address of its own, so start does not wait for the allocation: this check times it.
        configuration.advertisedAddresses = [NetworkAddress(ipv4: 127, 0, 0, 1, port: 9)]
        configuration.portMapping = false
        let clock = ContinuousClock()
        let started = clock.now
        let node: HuddleNode
        do {
            node = try await HuddleNode.start(configuration)
        } catch {
            check.error = "\(error)"
            return check
        }
        let outcome = await withTaskGroup(of: TurnAllocation?.self) { group in
            group.addTask {
                for await allocations in node.turnAllocationChanges() {
                    if let allocation = allocations.first, allocation.relayedAddress != nil || allocation.failure != nil
                    {
                        return allocation
                    }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: turnBudget)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        await node.shutdown()
        if let relayed = outcome?.relayedAddress {
            check.relayed = relayed
            check.elapsed = clock.now - started
        } else {
            check.error = outcome?.failure.map { "\($0)" } ?? "no answer within \(turnBudget)"
        }
        return check
    }
}
