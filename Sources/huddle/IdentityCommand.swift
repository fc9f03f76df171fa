import ArgumentParser
import HuddleCrypto

/// `huddle id`: creates the node identity if it is missing and prints its fingerprint.
struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Create the node identity if it is missing, and print its fingerprint."
    )

    @Option(name: .long, help: "Path of the identity file (created with mode 0600 if missing).")
    var identity: String?

    @Option(help: "The display name whose identity to show (~/.huddle/identities/NAME), when --identity is not given.")
    var name: String = NodeOptions.defaultName

    func run() throws {
        let identity = identity ?? IdentityStore.path(forName: name)
        let loaded: (identity: Identity, created: Bool)
        do {
            loaded = try IdentityStore.loadOrCreate(at: identity)
        } catch {
            // A damaged or unusable file is not a usage mistake: one line, exit 1, as `host` and `join` do (a
            // ValidationError would print the usage text too and exit 64).
            StandardError.write("error: \(IdentityStore.describe(error, path: identity))")
            throw ExitCode(1)
        }
        if loaded.created { StandardError.write("created identity \(identity)") }
        print(loaded.identity.publicIdentity.fingerprint)
    }
}
