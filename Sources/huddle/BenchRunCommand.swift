import ArgumentParser
import Foundation
import Huddle
import HuddleTransport

/// `huddle bench run`: joins a `huddle bench serve` session, runs one test against it, prints the figures.
struct BenchRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Join a bench server and measure.",
        discussion: """
            rtt: round trips of --message-size (64) byte reliable messages, one at a time (--count, after 100 \
            warm-up). rate: --message-size byte reliable messages one way for --duration seconds; the rate is what \
            the server received, over the time until it confirmed. bulk: --size bytes as 64 KiB reliable messages, \
            timed until the server confirmed every byte. journal: a --size byte attachment, timed from adding it \
            until the server verified and stored all of it. rtt-journal: rtt probes one at a time while a --size \
            byte attachment transfers to the server, until the server has all of it: the round trip under load, \
            with the attachment's MB/s. join: --count joins of fresh nodes, from starting the node to `joined`.
            """)

    enum Test: String, ExpressibleByArgument, CaseIterable {
        case rtt, rate, bulk, journal, join
        case rttJournal = "rtt-journal"
    }

    @Argument(help: "The ticket `huddle bench serve` printed.")
    var ticket: String

    @Option(help: "The test: rtt, rate, bulk, journal, rtt-journal or join.")
    var test: Test

    @Option(help: "Bytes for bulk and journal (suffixes K, M, G, KiB, MiB, GiB).", transform: BenchRunCommand.size)
    var size: UInt64 = 100 * 1_048_576

    @Option(help: "Seconds for rate.")
    var duration: Double = 5

    @Option(help: "Round trips for rtt, joins for join.")
    var count: Int = 10_000

    @Option(help: "Message size for rtt and rate, in bytes.")
    var messageSize: Int = 64

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @OptionGroup var node: BenchNodeOptions

    static let bulkMessageSize = 65_536
    private static let clock = ContinuousClock()

    static func size(_ text: String) throws -> UInt64 {
        let units: [(String, UInt64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1_000), ("M", 1_000_000), ("G", 1_000_000_000),
        ]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            guard let value = Double(text.dropLast(suffix.count)), value >= 0 else { break }
            return UInt64(value * Double(factor))
        }
        guard let value = UInt64(text) else { throw ValidationError("--size \(text): expected bytes, e.g. 100MiB") }
        return value
    }

    func validate() throws {
        guard (1...Messenger.maxMessageSize).contains(messageSize) else {
            throw ValidationError("--message-size must be 1...\(Messenger.maxMessageSize)")
        }
        guard count > 0, duration > 0 else { throw ValidationError("--count and --duration must be positive") }
    }

    func run() async throws {
        let invitation: Invitation
        do {
            invitation = try Invitation(parsing: ticket)
        } catch {
            StandardError.write("error: \(error)")
            throw ExitCode(2)
        }
        let result: BenchResult
        do {
            result = try await test == .join ? measureJoins(invitation) : measure(invitation)
        } catch {
            StandardError.write("error: \(test.rawValue): \(error)")
            throw ExitCode(1)
        }
        print(json ? result.json : result.table)
    }

    private func measure(_ invitation: Invitation) async throws -> BenchResult {
        let client = try await node.startNode(name: "bench-client")
        let session: GroupSession<BenchActivity>
        do {
            session = try await client.join(invitation, as: BenchActivity.self)
        } catch {
            await client.shutdown()
            throw error
        }
        defer { Task { await client.shutdown() } }
        guard let server = session.activeParticipants.first(where: { $0 != session.localParticipant }) else {
            throw CLIError("the server is not in the session")
        }
        let messenger = Messenger(session: session)
        let result = try await withTaskExecutorPreference(node.executor(for: client)) {
            var replies = messenger.messages(of: Data.self).makeAsyncIterator()
            switch test {
            case .rtt: return try await roundTrips(messenger, to: server, replies: &replies)
            case .rate: return try await rate(messenger, to: server, replies: &replies)
            case .bulk: return try await bulk(messenger, to: server, replies: &replies)
            case .journal: return try await attachment(session, messenger, replies: &replies)
            case .rttJournal: return try await roundTripsDuringAttachment(session, messenger, server, &replies)
            case .join: fatalError("handled by measureJoins")
            }
        }
        await session.leave()
        return result
    }

    private func roundTrips(
        _ messenger: Messenger, to server: Participant, replies: inout MessageStream<Data>.AsyncIterator
    ) async throws -> BenchResult {
        var probe = BenchMessage.padded(.echo, size: messageSize)
        var samples: [Double] = []
        samples.reserveCapacity(count)
        let warmUp = 100
        for index in 0..<(warmUp + count) {
            probe[probe.count - 1] = UInt8(truncatingIfNeeded: index)
            let start = Self.clock.now
            try await messenger.send(probe, to: .only([server]))
            guard let (reply, _) = await replies.next() else { throw CLIError("the session ended") }
            guard reply == probe else { throw CLIError("round trip \(index): the echo differs") }
            if index >= warmUp { samples.append(Self.seconds(Self.clock.now - start)) }
        }
        var result = BenchResult(test: "rtt")
        result.bytes = UInt64(messageSize) * UInt64(count)
        result.seconds = samples.reduce(0, +)
        result.setLatencies(samples)
        return result
    }

    private func rate(
        _ messenger: Messenger, to server: Participant, replies: inout MessageStream<Data>.AsyncIterator
    ) async throws -> BenchResult {
        let message = BenchMessage.padded(.rateMessage, size: messageSize)
        let start = Self.clock.now
        let end = start + .milliseconds(Int64(duration * 1000))
        var sent: UInt64 = 0
        while Self.clock.now < end {
            for _ in 0..<64 { try await messenger.send(message, to: .only([server])) }
            sent += 64
        }
        try await messenger.send(BenchMessage.rateEnd(sent: sent).encoded, to: .only([server]))
        guard let (reply, _) = await replies.next(), case .rateResult(let received) = BenchMessage(decoding: reply)
        else { throw CLIError("no rate result from the server") }
        let seconds = Self.seconds(Self.clock.now - start)
        guard received == sent else { throw CLIError("the server received \(received) of \(sent) messages") }
        var result = BenchResult(test: "rate")
        result.messages = Int(received)
        result.bytes = received * UInt64(messageSize)
        result.seconds = seconds
        result.messagesPerS = Double(received) / seconds
        result.mbPerS = Double(received * UInt64(messageSize)) / seconds / 1e6
        return result
    }

    private func bulk(
        _ messenger: Messenger, to server: Participant, replies: inout MessageStream<Data>.AsyncIterator
    ) async throws -> BenchResult {
        let piece = BenchMessage.padded(.bulkData, size: Self.bulkMessageSize)
        let start = Self.clock.now
        var sent: UInt64 = 0
        while sent < size {
            let remaining = size - sent
            let message = remaining >= UInt64(piece.count) ? piece : piece.prefix(Int(max(1, remaining)))
            try await messenger.send(message, to: .only([server]))
            sent += UInt64(message.count)
        }
        try await messenger.send(BenchMessage.bulkEnd(bytes: sent).encoded, to: .only([server]))
        guard let (reply, _) = await replies.next(), case .bulkResult(let received) = BenchMessage(decoding: reply)
        else { throw CLIError("no bulk result from the server") }
        let seconds = Self.seconds(Self.clock.now - start)
        guard received == sent else { throw CLIError("the server received \(received) of \(sent) bytes") }
        var result = BenchResult(test: "bulk")
        result.bytes = received
        result.seconds = seconds
        result.mbPerS = Double(received) / seconds / 1e6
        return result
    }

    private func attachment(
        _ session: GroupSession<BenchActivity>, _ messenger: Messenger,
        replies: inout MessageStream<Data>.AsyncIterator
    ) async throws -> BenchResult {
        let content = randomContent()
        let journal = Journal(session: session)
        let start = Self.clock.now
        let attachment = try await journal.add(content)
        guard let (reply, _) = await replies.next(), case .journalComplete(let id) = BenchMessage(decoding: reply),
            id == attachment.id
        else { throw CLIError("no completion from the server") }
        let seconds = Self.seconds(Self.clock.now - start)
        try await journal.remove(attachment)
        var result = BenchResult(test: "journal")
        result.bytes = size
        result.seconds = seconds
        result.mbPerS = Double(size) / seconds / 1e6
        return result
    }

    /// `--size` random (incompressible) bytes for an attachment.
    private func randomContent() -> Data {
        var random = SystemRandomGenerator()
        var content = Data(count: Int(size))
        content.withUnsafeMutableBytes { random.fill($0) }
        return content
    }

    /// Round trips on the messenger while a journal attachment moves on the same connection: the journal's chunks
    /// and the probes share the connection's congestion window, and the channel scheduler decides whether a probe
    /// waits behind chunks.
    private func roundTripsDuringAttachment(
        _ session: GroupSession<BenchActivity>, _ messenger: Messenger, _ server: Participant,
        _ replies: inout MessageStream<Data>.AsyncIterator
    ) async throws -> BenchResult {
        let content = randomContent()
        let journal = Journal(session: session)
        var probe = BenchMessage.padded(.echo, size: messageSize)
        var samples: [Double] = []
        let start = Self.clock.now
        let attachment = try await journal.add(content)
        var completed: ContinuousClock.Instant?
        var index = 0
        while completed == nil {
            probe[probe.count - 1] = UInt8(truncatingIfNeeded: index)
            index += 1
            let sent = Self.clock.now
            try await messenger.send(probe, to: .only([server]))
            while true {
                guard let (reply, _) = await replies.next() else { throw CLIError("the session ended") }
                if reply == probe {
                    samples.append(Self.seconds(Self.clock.now - sent))
                    break
                }
                guard case .journalComplete(let id) = BenchMessage(decoding: reply), id == attachment.id else {
                    throw CLIError("round trip \(index): unexpected reply")
                }
                completed = Self.clock.now
            }
        }
        let seconds = Self.seconds(completed! - start)
        try await journal.remove(attachment)
        var result = BenchResult(test: "rtt-journal")
        result.setLatencies(samples)
        result.bytes = size
        result.seconds = seconds
        result.mbPerS = Double(size) / seconds / 1e6
        return result
    }

    private func measureJoins(_ invitation: Invitation) async throws -> BenchResult {
        var samples: [Double] = []
        for _ in 0..<count {
            let start = Self.clock.now
            let client = try await node.startNode(name: "bench-join")
            let session = try await client.join(invitation, as: BenchActivity.self)
            samples.append(Self.seconds(Self.clock.now - start))
            await session.leave()
            await client.shutdown()
        }
        var result = BenchResult(test: "join")
        result.seconds = samples.reduce(0, +)
        result.setLatencies(samples)
        return result
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
