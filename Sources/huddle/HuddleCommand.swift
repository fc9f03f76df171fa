import ArgumentParser
import Huddle

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The `huddle` command line: a node of the Huddle mesh.
@main
struct HuddleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "huddle",
        abstract: "A peer-to-peer, end-to-end encrypted UDP mesh node (GroupActivities-style sessions).",
        discussion: """
            Examples:
              huddle demo                          # a four-member session over UDP, in one process
              huddle host --name ana               # start a chat session; prints a ticket
              huddle join TICKET --name ben        # join it from another terminal
              huddle host --lan "Ana's room"       # also announce it on the local network
              huddle discover                      # list the sessions announced nearby
              huddle relay --listen 0.0.0.0:3478   # a relay for members behind NATs
              huddle doctor --stun HOST:3478       # what this network lets a node do
            """,
        version: HuddleCommand.version,
        subcommands: [
            DemoCommand.self, HostCommand.self, JoinCommand.self, DiscoverCommand.self, RelayCommand.self,
            DoctorCommand.self, BenchCommand.self, IdentityCommand.self,
        ]
    )

    /// What `huddle --version` prints: this build's version and the protocol it speaks.
    static let version = "huddle \(HuddleNode.version) (protocol \(HuddleNode.protocolVersion))"

    static func main() async {
        // Scripts drive this binary through pipes; line buffering keeps output intact if it is killed.
        setvbuf(stdout, nil, _IOLBF, 0)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
