import ArgumentParser
import Foundation
import Huddle
import HuddleCrypto
import HuddleTransport
import Logging

/// `huddle bench`: measures throughput and latency between two real nodes, on one machine or across two.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure round trips, message rate, bulk and journal throughput between two nodes.",
        discussion: """
            Run `huddle bench serve` on one side: it prints a ticket on its first line and serves until SIGINT or \
            SIGTERM. Run `huddle bench run TICKET --test rtt|rate|bulk|journal|rtt-journal|join` on the other: it joins, \
            measures, prints a table (or with --json one JSON object) and leaves.
            """,
        subcommands: [BenchServeCommand.self, BenchRunCommand.self]
    )
}

/// The session `huddle bench` runs in.
struct BenchActivity: GroupActivity {
    static let activityIdentifier = "org.huddle.bench"
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "huddle bench", type: .generic) }
}

/// Options both sides take.
struct BenchNodeOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Address to listen on, HOST:PORT (port 0 picks a free one).",
            discussion: "Across two machines, listen on an address the other machine reaches (the ticket names "
                + "it), or on 0.0.0.0 (the ticket then names this machine's first non-loopback address)."))
    var listen: String = "127.0.0.1:0"

    @Option(help: "Congestion controller: bbr (default), cubic or newreno.")
    var congestion: HuddleNode.CongestionControl = .bbr

    @OptionGroup var pathMTU: PathMTUOption

    @Flag(
        help: ArgumentHelp(
            "Run the benchmark's own tasks on Swift's cooperative pool instead of the node's network thread.",
            discussion: "By default the tasks that send and read prefer HuddleNode.taskExecutor, as an application "
                + "that wants the lowest latency would; this measures an application that does not."))
    var onPool = false

    /// The executor the benchmark's tasks prefer for `node`: its network thread, or none with `--on-pool`.
    func executor(for node: HuddleNode) -> (any TaskExecutor)? {
        onPool ? nil : node.taskExecutor
    }

    /// Starts a node with a new in-memory identity (a benchmark needs no lasting one).
    func startNode(name: String) async throws -> HuddleNode {
        let (host, port) = try NodeOptions.split(listen, option: "--listen")
        var random = SystemRandomGenerator()
        var logger = Logger(label: "huddle.bench")
        logger.logLevel = .error
        var configuration = HuddleNode.Configuration(
            identity: Identity(using: &random), name: name, host: host, port: port, logger: logger)
        configuration.congestionControl = congestion
        pathMTU.apply(to: &configuration)
        return try await HuddleNode.start(configuration)
    }
}
