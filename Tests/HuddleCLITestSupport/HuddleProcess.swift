import Foundation
import Synchronization

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// One running `huddle` process driven through pipes: lines go to its standard input, and its `--json` events and
/// standard error lines are collected as they arrive.
///
/// `@unchecked Sendable`: `Process` is not `Sendable`, but it is only started in `init` and afterwards only asked for
/// its state or signalled by pid, both thread-safe; everything the reader threads write is behind `state`.
public final class HuddleProcess: @unchecked Sendable {
    /// What the process printed so far.
    struct Output {
        var stdoutLines: [String] = []
        var events: [Event] = []
        var stderrLines: [String] = []
        var stdoutClosed = false
        var stderrClosed = false
        var stdoutPartial = Data()
        var stderrPartial = Data()
    }

    /// A name for messages (`host`, `ada`, ...).
    public let label: String
    /// The process id.
    public let pid: Int32
    /// When the process was started.
    public let startedAt: ContinuousClock.Instant
    private let process: Process
    private let stdin: FileHandle
    private let state = Mutex(Output())

    /// Starts `executable` with `arguments` (for `ip netns exec`, the executable is `ip`), with `environment`
    /// added to (or replacing variables of) the test runner's environment.
    public init(label: String, executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        self.label = label
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        }
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        startedAt = ContinuousClock().now
        try process.run()
        self.process = process
        self.pid = process.processIdentifier
        self.stdin = input.fileHandleForWriting
        // Our copies of the child's ends must go, or EOF never arrives.
        try? input.fileHandleForReading.close()
        try? output.fileHandleForWriting.close()
        try? errors.fileHandleForWriting.close()
        read(output.fileHandleForReading, stdout: true)
        read(errors.fileHandleForReading, stdout: false)
    }

    /// Reads `handle` on its own thread until EOF, splitting it into lines.
    private func read(_ handle: FileHandle, stdout: Bool) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                state.withLock { output in
                    if chunk.isEmpty {
                        if stdout { output.stdoutClosed = true } else { output.stderrClosed = true }
                        return
                    }
                    var partial = stdout ? output.stdoutPartial : output.stderrPartial
                    partial.append(chunk)
                    while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: partial[partial.startIndex..<newline], as: UTF8.self)
                        partial = Data(partial[partial.index(after: newline)...])
                        if stdout {
                            output.stdoutLines.append(line)
                            if let event = Event(parsing: line) { output.events.append(event) }
                        } else {
                            output.stderrLines.append(line)
                        }
                    }
                    if stdout { output.stdoutPartial = partial } else { output.stderrPartial = partial }
                }
                if chunk.isEmpty { break }
            }
            try? handle.close()
        }
        thread.start()
    }

    // MARK: - Input

    /// Writes `line` and a newline to the process's standard input.
    public func send(_ line: String) throws {
        try stdin.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Closes standard input (the process sees EOF).
    public func closeInput() {
        try? stdin.close()
    }

    // MARK: - Output

    /// Every JSON event so far.
    public var events: [Event] { state.withLock { $0.events } }
    /// Every standard output line so far.
    public var stdoutLines: [String] { state.withLock { $0.stdoutLines } }
    /// Every standard error line so far.
    public var stderrLines: [String] { state.withLock { $0.stderrLines } }
    /// Whether both output pipes reached EOF.
    public var outputClosed: Bool { state.withLock { $0.stdoutClosed && $0.stderrClosed } }

    /// Waits until some event satisfies `predicate` (earlier events count too) and returns the first one; throws
    /// ``HuddleProcessError/timedOut(_:)`` after `seconds`.
    @discardableResult
    public func waitForEvent(
        _ what: String, within seconds: Double = 10, where predicate: (Event) -> Bool
    ) async throws -> Event {
        try await poll("\(label): \(what)", within: seconds) { events.first(where: predicate) }
    }

    /// Waits for the first event named `name` with the given string fields.
    @discardableResult
    public func waitForEvent(
        _ name: String, _ fields: [String: String] = [:], within seconds: Double = 10
    ) async throws -> Event {
        try await waitForEvent("event \(name) \(fields)", within: seconds) { event in
            event.name == name && fields.allSatisfy { event[$0.key] == $0.value }
        }
    }

    /// Asks `/peers` until the process reports `count` other participants (connections come up one by one after
    /// `joined`).
    public func waitForPeerCount(_ count: Int, within seconds: Double = 30) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        while clock.now < deadline {
            let asked = events.filter { $0.name == "peers" }.count + 1
            try send("/peers")
            try await waitForEvent("answer to /peers", within: 5) { _ in
                events.filter { $0.name == "peers" }.count >= asked
            }
            if events.last(where: { $0.name == "peers" })?["count"] == "\(count)" { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw HuddleProcessError.timedOut("\(label) never saw \(count) peers: \(events.suffix(5))")
    }

    /// Waits until `body` returns a value, polling every 20 ms; throws ``HuddleProcessError/timedOut(_:)`` after
    /// `seconds`.
    @discardableResult
    public func poll<Value>(_ what: String, within seconds: Double, _ body: () -> Value?) async throws -> Value {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        while true {
            if let value = body() { return value }
            guard clock.now < deadline else {
                let printed = "stdout: \(stdoutLines.suffix(20)); stderr: \(stderrLines.suffix(10))"
                throw HuddleProcessError.timedOut("\(what) (within \(seconds) s); \(printed)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    // MARK: - Life

    /// Whether the process is still running.
    public var isRunning: Bool { process.isRunning }

    /// Waits for the process to exit and its output to be read; returns its exit status (a signal that killed it
    /// counts as 128 + signal).
    public func waitForExit(within seconds: Double = 10) async throws -> Int32 {
        try await poll("\(label) exits", within: seconds) { () -> Int32? in
            guard !process.isRunning, outputClosed else { return nil }
            return process.terminationReason == .uncaughtSignal
                ? 128 + process.terminationStatus : process.terminationStatus
        }
    }

    /// Sends `signal` to the process.
    public func signal(_ signal: Int32) {
        if process.isRunning { _ = Glibc.kill(pid, signal) }
    }

    /// Kills the process (SIGKILL) if it still runs and reaps it. Safe to call any number of times.
    public func stop() {
        closeInput()
        guard process.isRunning else { return }
        _ = Glibc.kill(pid, SIGKILL)
        process.waitUntilExit()
    }
}
