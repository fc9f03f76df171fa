import ArgumentParser

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The `huddle` command line: a node of the Huddle mesh.
@main
struct HuddleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "huddle",
        abstract: "A peer-to-peer, end-to-end encrypted UDP mesh node (GroupActivities-style sessions).",
        subcommands: [
            DemoCommand.self, HostCommand.self, JoinCommand.self, DiscoverCommand.self, RelayCommand.self,
            BenchCommand.self, IdentityCommand.self,
        ]
    )

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
