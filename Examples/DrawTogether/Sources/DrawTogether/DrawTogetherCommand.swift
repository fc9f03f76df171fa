import ArgumentParser
import Foundation
import Huddle
import HuddleServiceLifecycle
import Hummingbird
import HummingbirdWebSocket
import Logging
import ServiceLifecycle

/// `DrawTogether --host` or `DrawTogether --join TICKET`: a Huddle node in a drawing session, and a web page on
/// 127.0.0.1 to draw in.
@main
struct DrawTogetherCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "DrawTogether", abstract: "Draw together in the browser, over Huddle.")

    @Flag(help: "Start a new drawing session.")
    var host = false

    @Option(help: "Join the session of this ticket (the host page's Invite button shows it).")
    var join: String?

    @Option(help: "Your name.")
    var name = ProcessInfo.processInfo.environment["USER"] ?? "artist"

    @Option(help: "The web page's port on 127.0.0.1 (0: any free one).")
    var port = 8080

    @Option(help: "The UDP address Huddle listens on (0.0.0.0:PORT to draw with other machines).")
    var listen = "127.0.0.1:0"

    func validate() throws {
        guard host != (join != nil) else { throw ValidationError("give --host or --join TICKET") }
    }

    func run() async throws {
        var random = SystemRandomGenerator()
        let parts = listen.split(separator: ":")
        var configuration = HuddleNode.Configuration(
            identity: Identity(using: &random), name: name, host: String(parts.first ?? "127.0.0.1"),
            port: Int(parts.last ?? "0") ?? 0)
        configuration.logger.logLevel = .warning
        let node = try await HuddleNode.start(configuration)

        let session: GroupSession<DrawTogether>
        if let join {
            session = try await node.join(try Invitation(parsing: join), as: DrawTogether.self)
        } else {
            session = try await node.activate(DrawTogether())
            try await session.join()
        }
        let ticket = try await session.makeInvitation().ticket
        let canvas = Canvas(me: session.localParticipant, ticket: ticket)
        let coordinator = Coordinator(session: session, canvas: canvas)
        let following = Task { await coordinator.run() }

        let router = WebPage.router(canvas: canvas, coordinator: coordinator)
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(
                webSocketRouter: router,
                configuration: .init(ws: .init(maxFrameSize: 16 << 20))),
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                // One line for people and scripts: where to point the browser, and the ticket for others.
                let url = "http://127.0.0.1:\(channel.localAddress?.port ?? 0)/"
                let line = #"{"event":"ready","url":"\#(url)","ticket":"\#(ticket)"}"# + "\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            },
            logger: Logger(label: "DrawTogether")
        )
        // The page and the node stop together; on SIGINT or SIGTERM the node leaves the session first.
        let services = ServiceGroup(
            services: [app, HuddleNodeService(node)], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: Logger(label: "DrawTogether"))
        try await services.run()
        following.cancel()
    }
}
