import ArgumentParser
import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleTransport
import NIOPosix

/// `huddle relay`: a rendezvous and relay server for nodes that cannot reach each other directly.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Run a relay: nodes behind NATs register here, meet, and fall back to it when hole punching fails.",
        discussion: """
            Run it on a host both sides can reach (a public address), then start nodes with --relay HOST:PORT. The \
            relay forwards sealed packets between registered nodes and tells each the address it sees it at; it \
            never holds session keys. A node registers by proving its static key; the relay forwards only between \
            registered nodes, at most --rate bytes per second for each. Runs until SIGINT or SIGTERM, then prints \
            its counters; with --json each registration is a relay-registered event and each one that ends a \
            relay-unregistered event.

            Examples:
              huddle relay                                  # on 0.0.0.0:3478
              huddle relay --listen 0.0.0.0:3478 --json --rate 2MiB
            """
    )

    @Option(help: "Address to listen on, HOST:PORT.")
    var listen: String = "0.0.0.0:3478"

    @Option(help: "Bytes per second the relay forwards for each client (a token bucket), e.g. 8MiB or 500KiB.")
    var rate = ByteSize(bytes: 8 << 20)

    @Option(help: "Bytes a client may send above its rate in a burst, e.g. 1MiB.")
    var burst = ByteSize(bytes: 1 << 20)

    @Option(help: "Most clients registered at once.")
    var maxClients: Int = 4096

    @Flag(help: "Print one JSON object per line on standard output instead of text for people.")
    var json = false

    func validate() throws {
        guard rate.bytes > 0, burst.bytes >= 1500, maxClients > 0 else {
            throw ValidationError("--rate and --max-clients must be positive, --burst at least 1500 bytes")
        }
    }

    func run() async throws {
        Signals.install()
        let output = EventOutput(json: json)
        let (host, port) = try NodeOptions.split(listen, option: "--listen")
        var random = SystemRandomGenerator()
        var configuration = RelayServerConfiguration(identity: Identity(using: &random))
        configuration.bytesPerSecondPerClient = rate.bytes
        configuration.burstBytesPerClient = burst.bytes
        configuration.maxRegistrations = maxClients
        let driver: UDPRelayDriver
        do {
            driver = try await UDPRelayDriver.bind(
                host: host, port: port, configuration: configuration, group: MultiThreadedEventLoopGroup.singleton)
        } catch {
            output.startFailed(error)
            throw ExitCode(1)
        }
        output.emit(
            "relay-listening", ["address": .string(driver.localAddress.description)],
            text: "relay listening on \(driver.localAddress)")
        let reporting = Task {
            for await event in driver.events { output.relayEvent(event) }
        }
        let signal = await Signals.first()
        let statistics = driver.statistics
        await driver.close()
        await reporting.value
        output.emit(
            "relay-stopped",
            [
                "signal": .string(signal.map(Signals.name) ?? "none"),
                "registrations": .integer(statistics.registrationsConfirmed),
                "refused": .integer(statistics.registrationsRefused),
                "forwardedPackets": .integer(statistics.packetsForwarded),
                "forwardedBytes": .integer(statistics.bytesForwarded),
                "rateLimitedPackets": .integer(statistics.rateLimitedDropped),
                "unregisteredDropped": .integer(statistics.unregisteredSourceDropped),
            ],
            text: "relay stopped: \(statistics.packetsForwarded) packets (\(statistics.bytesForwarded) bytes) "
                + "forwarded, \(statistics.registrationsRefused) registrations refused, "
                + "\(statistics.rateLimitedDropped) packets over the rate")
    }
}
