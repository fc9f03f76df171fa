import ArgumentParser

/// `huddle demo`: the built-in demonstration, no arguments or setup needed.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show what Huddle does, in one process with no setup.",
        discussion: """
            Two identities complete a Noise IKpsk2 handshake in WireGuard-layout messages, exchange encrypted and \
            authenticated transport packets carrying MESSAGE and ACK frames, watch forged, tampered and replayed \
            packets get rejected, and measure this machine's crypto throughput. Everything runs in memory; the \
            networked mesh arrives with the transport layer.
            """
    )

    @Option(help: "Seconds to spend on each throughput measurement.")
    var measureSeconds: Double = 0.3

    func run() throws {
        var demo = InMemoryDemo(measureSeconds: measureSeconds)
        try demo.run()
    }
}
