import ArgumentParser
import Huddle

/// `huddle host`: starts a session and prints its ticket.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Start a chat session and print a ticket others can join with.",
        discussion: """
            Prints the ticket first (with --json: {"event":"ticket",...}), then what happens.

            """ + ChatRunner.commandHelp
    )

    @OptionGroup var options: NodeOptions

    @Option(help: "What the session is about.")
    var topic: String = "huddle chat"

    @Option(help: "How long the printed ticket stays valid, in seconds.")
    var ticketLifetime: Int = 24 * 3600

    func run() async throws {
        Signals.install()
        let output = EventOutput(json: options.json)
        let started: NodeOptions.Started
        do {
            started = try await options.startNode()
        } catch {
            output.error(code: "start-failed", "\(error)")
            throw ExitCode(1)
        }
        let node = started.node
        let session: GroupSession<ChatActivity>
        do {
            session = try await node.activate(ChatActivity(topic: topic))
            try await session.join()
            output.ticket(try await session.makeInvitation(validFor: .seconds(ticketLifetime)))
            if let server = started.metricsServer { output.metrics(server.localAddress) }
        } catch {
            output.error(code: "host-failed", "\(error)")
            await node.shutdown()
            throw ExitCode(1)
        }
        let status = await ChatRunner(node: node, session: session, output: output, stay: options.stay).run()
        throw ExitCode(status)
    }
}
