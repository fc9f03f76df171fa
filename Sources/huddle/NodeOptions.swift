import ArgumentParser
import Foundation
import Huddle
import HuddleCrypto
import Logging

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Options every command that runs a node takes.
struct NodeOptions: ParsableArguments {
    @Option(help: "Address to listen on, HOST:PORT ([IPv6]:PORT for IPv6; port 0 picks a free one).")
    var listen: String = "127.0.0.1:0"

    @Option(help: "Path of the identity file (created with mode 0600 if missing).")
    var identity: String = IdentityStore.defaultPath

    @Option(help: "Display name other participants see.")
    var name: String = NodeOptions.defaultName

    @Option(
        help: ArgumentHelp(
            "Directory for shared attachments (one subdirectory per session, deleted on leaving it).",
            discussion: "By default a new temporary directory, deleted when the node stops. Keep a directory to "
                + "resume interrupted downloads after a crash."))
    var dataDir: String?

    @Flag(help: "Print one JSON object per line on standard output instead of text for people.")
    var json = false

    @Flag(help: "At the end of standard input keep running until SIGINT or SIGTERM (then leave gracefully).")
    var stay = false

    @Option(help: "Diagnostics level on standard error: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "warning"

    static var defaultName: String {
        getenv("USER").map { String(cString: $0) } ?? "huddler"
    }

    /// The listen address split into host and port.
    func hostAndPort() throws -> (host: String, port: Int) {
        try Self.split(listen, option: "--listen")
    }

    /// Splits `HOST:PORT` (`[IPv6]:PORT` for IPv6) given as `option`; an empty host means every IPv4 address.
    static func split(_ address: String, option: String) throws -> (host: String, port: Int) {
        let text = address.trimmingCharacters(in: .whitespaces)
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ValidationError("\(option) \(address): expected [IPv6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ValidationError("\(option) \(address): expected HOST:PORT")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw ValidationError("\(option) \(address): the port must be 0-65535")
        }
        return (host.isEmpty ? "0.0.0.0" : String(host), port)
    }

    /// Loads (or creates) the identity and starts a node.
    func startNode() async throws -> HuddleNode {
        let (host, port) = try hostAndPort()
        let loaded: (identity: Identity, created: Bool)
        do {
            loaded = try IdentityStore.loadOrCreate(at: identity)
        } catch {
            throw CLIError("identity \(identity): \(error)")
        }
        if loaded.created { StandardError.write("created identity \(identity)") }
        var logger = Logger(label: "huddle")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        var configuration = HuddleNode.Configuration(
            identity: loaded.identity, name: name, host: host, port: port, logger: logger)
        configuration.dataDirectory = dataDir.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        return try await HuddleNode.start(configuration)
    }
}
