import HuddleCrypto
import HuddleTransport

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Loads the node identity from its file, creating it (mode 0600, parent directories 0700) when missing.
enum IdentityStore {
    /// `~/.huddle/identity`.
    static var defaultPath: String {
        let home = getenv("HOME").map { String(cString: $0) } ?? "."
        return home + "/.huddle/identity"
    }

    /// The identity at `path`, and whether it was just created. A damaged, foreign-owned or too-open file is an
    /// error that says which, never silently replaced.
    static func loadOrCreate(at path: String) throws -> (identity: Identity, created: Bool) {
        do {
            return (try IdentityFile.read(from: path), false)
        } catch CryptoError.identityFile(.notFound) {
            try createParentDirectory(of: path)
            var random = SystemRandomGenerator()
            let identity = Identity(using: &random)
            try IdentityFile.write(identity, to: path)
            return (identity, true)
        }
    }

    private static func createParentDirectory(of path: String) throws {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let directory = String(path[..<slash])
        var components: [Substring] = []
        for component in directory.split(separator: "/", omittingEmptySubsequences: false) {
            components.append(component)
            let partial = components.joined(separator: "/")
            guard !partial.isEmpty else { continue }
            if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                throw CLIError("cannot create directory \(partial): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// A one-line error for the person at the terminal (printed to stderr, non-zero exit).
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
