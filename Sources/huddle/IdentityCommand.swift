import HuddleTransport
import ArgumentParser
import HuddleCrypto

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// `huddle id`: creates the node identity if it is missing and prints its fingerprint.
struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Create the node identity if it is missing, and print its fingerprint."
    )

    @Option(name: .long, help: "Path of the identity file (created with mode 0600 if missing).")
    var identity: String = IdentityCommand.defaultPath

    static var defaultPath: String {
        let home = getenv("HOME").map { String(cString: $0) } ?? "."
        return home + "/.huddle/identity"
    }

    func run() throws {
        let loaded: Identity
        do {
            loaded = try IdentityFile.read(from: identity)
        } catch CryptoError.identityFile(.notFound) {
            try createParentDirectory(of: identity)
            var random = SystemRandomGenerator()
            loaded = Identity(using: &random)
            do {
                try IdentityFile.write(loaded, to: identity)
            } catch {
                throw ValidationError("\(error)")
            }
            FileHandleOutput.standardError("created identity \(identity)")
        } catch {
            throw ValidationError("\(error)")
        }
        print(loaded.publicIdentity.fingerprint)
    }

    private func createParentDirectory(of path: String) throws {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let directory = String(path[..<slash])
        var components: [Substring] = []
        for component in directory.split(separator: "/", omittingEmptySubsequences: false) {
            components.append(component)
            let partial = components.joined(separator: "/")
            guard !partial.isEmpty else { continue }
            if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                throw ValidationError("cannot create directory \(partial): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// Writes diagnostics to standard error, leaving standard output to results.
enum FileHandleOutput {
    static func standardError(_ line: String) {
        fputs(line + "\n", stderr)
    }
}
