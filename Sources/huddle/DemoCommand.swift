import ArgumentParser

/// `huddle demo`: the built-in demonstration, no arguments or setup needed.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show what Huddle does, in one process with no setup.",
        discussion: """
            Four nodes on loopback UDP: ana starts a session and prints a ticket, ben and cy join with it, everyone \
            chats, ana leaves and the others carry on, ben invites dee, who joins late and is caught up on the \
            shared state by ben; then ben ends the session for everyone. Prints what happened with timings. \
            --wire shows the protocol layer instead: a handshake and encrypted packets in memory, forged and \
            replayed packets rejected, and this machine's crypto throughput.
            """
    )

    @Flag(help: "Show the wire-level demo (handshake, packet protection, forgeries) instead of the session demo.")
    var wire = false

    @Option(help: "With --wire: seconds to spend on each throughput measurement.")
    var measureSeconds: Double = 0.3

    func run() async throws {
        if wire {
            var demo = InMemoryDemo(measureSeconds: measureSeconds)
            try demo.run()
        } else {
            try await MeshDemo().run()
        }
    }
}
