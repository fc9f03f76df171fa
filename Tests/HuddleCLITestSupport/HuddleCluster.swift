import Foundation
import Synchronization

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The `huddle` processes of one test, with a scratch directory for their identity files. ``tearDown()`` kills every
/// process still running and removes the directory; call it in a `defer` so a failing test cleans up too.
public final class HuddleCluster: Sendable {
    /// The `huddle` executable.
    public let executable: String
    /// Scratch directory (identity files).
    public let directory: String
    private let processes = Mutex<[HuddleProcess]>([])

    /// Locates the executable and creates the scratch directory.
    public init() throws {
        executable = try Self.locateExecutable()
        // Writing to a process that already exited must be an error, not a SIGPIPE that kills the test runner.
        Glibc.signal(SIGPIPE, SIG_IGN)
        var template = Array((FileManager.default.temporaryDirectory.path + "/huddle-itest-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw HuddleProcessError.commandFailed("mkdtemp: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
    }

    /// The `huddle` executable: `$HUDDLE_EXECUTABLE`, else `huddle` next to the running test bundle (SwiftPM puts
    /// every product of a configuration in one directory, and `swift test` builds the executable too), else
    /// `.build/debug/huddle` under the current directory.
    public static func locateExecutable() throws -> String {
        if let path = ProcessInfo.processInfo.environment["HUDDLE_EXECUTABLE"] {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw HuddleProcessError.executableMissing("HUDDLE_EXECUTABLE=\(path) is not an executable file")
            }
            return path
        }
        var candidates: [String] = []
        if let runner = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(
                URL(fileURLWithPath: runner).deletingLastPathComponent().appendingPathComponent("huddle").path)
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("huddle").path)
        candidates.append(FileManager.default.currentDirectoryPath + "/.build/debug/huddle")
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        throw HuddleProcessError.executableMissing(
            "the huddle executable is missing (looked at \(candidates.joined(separator: ", "))); build it with "
                + "`swift build` (or `swift build --product huddle`), or set HUDDLE_EXECUTABLE")
    }

    /// The identity file of the node called `name`.
    public func identityPath(_ name: String) -> String { "\(directory)/\(name).identity" }

    /// Starts `huddle` with `arguments`, inside network namespace `namespace` when given, with `environment` added to
    /// the test runner's; `binary` replaces ``executable`` (another version's `huddle`).
    public func start(
        _ label: String, _ arguments: [String], namespace: String? = nil, environment: [String: String] = [:],
        binary: String? = nil
    ) throws -> HuddleProcess {
        let executable = binary ?? self.executable
        let process =
            if let namespace {
                try HuddleProcess(
                    label: label, executable: NetworkNamespace.ip,
                    arguments: ["netns", "exec", namespace, executable] + arguments, environment: environment)
            } else {
                try HuddleProcess(
                    label: label, executable: executable, arguments: arguments, environment: environment)
            }
        processes.withLock { $0.append(process) }
        return process
    }

    /// Starts `huddle host --json` as `name` and waits for its ticket.
    public func host(
        _ name: String, listen: String = "127.0.0.1:0", namespace: String? = nil, extra: [String] = [],
        binary: String? = nil
    ) async throws -> (process: HuddleProcess, ticket: String) {
        let process = try start(
            name,
            ["host", "--json", "--name", name, "--identity", identityPath(name), "--listen", listen] + extra,
            namespace: namespace, binary: binary)
        let event = try await process.waitForEvent("ticket", within: 20)
        guard let ticket = event["ticket"] else {
            throw HuddleProcessError.commandFailed("ticket event without ticket")
        }
        return (process, ticket)
    }

    /// Starts `huddle join TICKET --json` as `name` (it is not awaited: wait for its `joined` event).
    public func join(
        _ ticket: String, as name: String, listen: String = "127.0.0.1:0", namespace: String? = nil,
        extra: [String] = [], binary: String? = nil
    ) throws -> HuddleProcess {
        try start(
            name,
            ["join", ticket, "--json", "--name", name, "--identity", identityPath(name), "--listen", listen] + extra,
            namespace: namespace, binary: binary)
    }

    /// Kills every process still running and removes the scratch directory.
    public func tearDown() {
        for process in processes.withLock({ $0 }) { process.stop() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a command to completion (setup commands such as `ip` and `nft`); returns its status and combined output.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
