import HuddleCrypto
import HuddleTransport

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Loads the node identity from its file, creating it (mode 0600, parent directories 0700) when missing.
///
/// Each display name keeps its own identity: `--name ana` uses `~/.huddle/identities/ana`, so a name is the same
/// participant from run to run, and a new name is a new participant (never another name's identity). A running node
/// holds its identity file with an advisory lock (`flock`) until it exits. Two nodes with one identity cannot meet (a
/// node never connects to its own key), so a second node started under a name a running node already uses takes the
/// first free `NAME-2` ... `NAME-8` file instead and says so: two terminals on one machine just work.
enum IdentityStore {
    /// `~/.huddle`.
    static var directory: String {
        let home = getenv("HOME").map { String(cString: $0) } ?? "."
        return home + "/.huddle"
    }

    /// `~/.huddle/identities/NAME`, with every character outside `A-Z a-z 0-9 . _ -` (and a leading dot) written
    /// as `%XX` of its UTF-8 bytes, so any display name is one plain file name.
    static func path(forName name: String) -> String {
        var file = ""
        for byte in name.utf8 {
            let scalar = Unicode.Scalar(byte)
            let plain =
                byte < 0x80
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(Character(scalar))
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                    || (byte == UInt8(ascii: ".") && !file.isEmpty))
            file += plain ? String(scalar) : String(format: "%%%02X", byte)
        }
        return "\(directory)/identities/\(file.isEmpty ? "%" : file)"
    }

    /// How many identities one name offers running processes before asking for `--identity`.
    static let slotsPerName = 8

    /// The identity file number `slot` of `name` (1: ``path(forName:)``, then `NAME-2`, ...).
    static func path(forName name: String, slot: Int) -> String {
        slot == 1 ? path(forName: name) : "\(path(forName: name))-\(slot)"
    }

    /// An identity held for this process.
    struct Held {
        /// The identity.
        var identity: Identity
        /// Its file.
        var path: String
        /// Whether the file was just created.
        var created: Bool
        /// Whether another running process holds the file too (only when it was named with `--identity`).
        var shared: Bool
    }

    /// The identity at `explicitPath` (shared with other processes if they hold it too: the person chose it), or
    /// without one the first identity of `name` no running node holds. Keeps the lock until the process exits.
    static func acquire(explicitPath: String?, name: String) throws -> Held {
        if let explicitPath {
            let loaded = try loadOrCreate(at: explicitPath)
            let locked = try lock(explicitPath)
            return Held(identity: loaded.identity, path: explicitPath, created: loaded.created, shared: !locked)
        }
        for slot in 1...slotsPerName {
            let path = path(forName: name, slot: slot)
            let loaded = try loadOrCreate(at: path)
            if try lock(path) {
                return Held(identity: loaded.identity, path: path, created: loaded.created, shared: false)
            }
        }
        throw CLIError(
            "\(path(forName: name)) and its -2 to -\(slotsPerName) are all held by running huddle processes named "
                + "\"\(name)\"; choose another --name, or an identity with --identity PATH")
    }

    /// Descriptors of the identity files this process holds, kept open (closing one would release its lock).
    nonisolated(unsafe) private static var held: [Int32] = []

    /// Takes the advisory lock on `path` for the life of the process; `false` if another process holds it.
    private static func lock(_ path: String) throws -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CLIError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK { return false }
            throw CLIError("cannot lock \(path): \(String(cString: strerror(code)))")
        }
        held.append(descriptor)
        return true
    }

    /// One line for the person at the terminal about a failure to use the identity at `path`, naming the file
    /// once: the identity file's own messages mostly name it already.
    static func describe(_ error: any Error, path: String) -> String {
        switch error {
        case CryptoError.identityFile(.notFound), CryptoError.identityFile(.io),
            CryptoError.identityFile(.insecurePermissions):
            "\(error)"
        case let error as CLIError where error.description.contains(path):
            error.description
        default:
            "identity file \(path): \(error)"
        }
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
