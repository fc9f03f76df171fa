import ArgumentParser
import Huddle

/// `huddle host`: starts a session and prints its ticket.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Start a chat session and print a ticket others can join with.",
        discussion: """
            Prints the ticket first (with --json: {"event":"ticket",...}), then what happens.

            Examples:
              huddle host --name ana                              # on this machine (loopback)
              huddle host --name ana --listen 0.0.0.0:7000        # reachable from other machines on port 7000
              huddle host --name ana --relay relay.example:3478   # members behind NATs meet through a relay
              huddle host --name ana --lan "Ana's room" --json    # also announced nearby; JSON events
              huddle host --name ana --ask-to-join                # each joiner waits for /admit NAME

            """ + ChatRunner.commandHelp
    )

    @OptionGroup var options: NodeOptions

    @Option(help: "What the session is about.")
    var topic: String = "huddle chat"

    @Option(help: "How long the printed ticket stays valid, in seconds.")
    var ticketLifetime: Int = 24 * 3600

    @Option(
        help: ArgumentHelp(
            "Let at most this many joiners in with the printed ticket (1: single-use).",
            discussion: "Such a ticket names only this node, which keeps its count; it works while this node is in "
                + "the session.",
            valueName: "n"))
    var ticketUses: Int?

    @Flag(
        help: ArgumentHelp(
            "Make the printed ticket ask to join: each joiner waits until a member lets it in (/admit NAME).",
            discussion: "Every member sees the request (a join-request event) and any of them may answer; a "
                + "leaked ticket then lets nobody in unasked."))
    var askToJoin = false

    @Option(
        help: ArgumentHelp(
            "Also announce the session on the local network under this name (huddle discover lists it).",
            discussion: "Anyone on the network segment can then join with `huddle join --lan NAME`, without a "
                + "ticket, for --lan-lifetime seconds: announce only where that is what you want. Needs --listen "
                + "0.0.0.0:PORT or an IPv4 interface address.",
            valueName: "name"))
    var lan: String?

    @Option(help: "How long the local-network announcement (and the ticket it carries) lasts, in seconds.")
    var lanLifetime: Int = 600

    func run() async throws {
        Signals.install()
        let output = EventOutput(json: options.json)
        let started: NodeOptions.Started
        do {
            started = try await options.startNode()
        } catch {
            output.startFailed(error)
            throw ExitCode(1)
        }
        let node = started.node
        let session: GroupSession<ChatActivity>
        do {
            session = try await node.activate(ChatActivity(topic: topic))
            try await session.join()
            output.ticket(
                try await session.makeInvitation(
                    validFor: .seconds(ticketLifetime), requiresApproval: askToJoin, uses: ticketUses),
                askToJoin: askToJoin, uses: ticketUses)
            if let server = started.metricsServer { output.metrics(server.localAddress) }
            StateReporter.start(node, output: output)
            if let lan {
                output.announcing(try await session.announceNearby(as: lan, validFor: .seconds(lanLifetime)))
            }
        } catch {
            output.error(code: "host-failed", "\(error)")
            await node.shutdown()
            throw ExitCode(1)
        }
        let status = await ChatRunner(node: node, session: session, output: output, stay: options.stay).run()
        throw ExitCode(status)
    }
}
