import ArgumentParser

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The `huddle` command line: a node of the Huddle mesh.
@main
struct HuddleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "huddle",
        abstract: "A peer-to-peer, end-to-end encrypted UDP mesh node (GroupActivities-style sessions).",
        subcommands: [DemoCommand.self, IdentityCommand.self]
    )

    static func main() {
        // Scripts drive this binary through pipes; line buffering keeps output intact if it is killed.
        setvbuf(stdout, nil, _IOLBF, 0)
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            exit(withError: error)
        }
    }
}
