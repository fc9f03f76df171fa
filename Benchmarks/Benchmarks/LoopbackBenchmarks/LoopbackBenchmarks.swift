import Benchmark
import Foundation
import Huddle
import HuddleCrypto

/// `HUDDLE_BENCH_SMOKE=1` (set by `make bench-smoke`, part of `make test`) runs each benchmark for a moment only,
/// to check that the suite works; the figures are then meaningless.
let smoke = ProcessInfo.processInfo.environment["HUDDLE_BENCH_SMOKE"] != nil

/// End to end through the public API over loopback UDP, in one process: every message is encrypted, sent through a
/// real socket, acknowledged, decrypted and delivered to a `Messenger` stream. Latency percentiles come from the
/// round-trip benchmark's wall clock per iteration; rates are iterations per second times the messages or bytes
/// per iteration given in each name.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .cpuTotal, .mallocCountTotal],
        maxDuration: .seconds(10),
        maxIterations: 100
    )
    if smoke {
        Benchmark.defaultConfiguration.maxDuration = .milliseconds(200)
        Benchmark.defaultConfiguration.maxIterations = 3
    }

    Benchmark(
        "Round trip of a 64 B reliable message (one per iteration)",
        configuration: .init(
            metrics: [.wallClock, .mallocCountTotal], warmupIterations: smoke ? 1 : 100,
            maxDuration: smoke ? .milliseconds(200) : .seconds(10), maxIterations: smoke ? 3 : 20_000),
        closure: { benchmark in
            let pair = try await Fixture.pair()
            let probe = Data(repeating: Tag.echo, count: 64)
            for _ in benchmark.scaledIterations {
                try await pair.clientMessenger.send(probe, to: .only([pair.server]))
                _ = await pair.replies.next()
            }
        })

    Benchmark("64 B reliable messages one way, 10,000 per iteration (confirmed)") { benchmark in
        let pair = try await Fixture.pair()
        let message = Data(repeating: Tag.count, count: 64)
        for _ in benchmark.scaledIterations {
            for _ in 0..<10_000 { try await pair.clientMessenger.send(message, to: .only([pair.server])) }
            try await pair.clientMessenger.send(Data([Tag.report]), to: .only([pair.server]))
            _ = await pair.replies.next()
        }
    }

    for (label, size) in [("1 MiB", 1 << 20), (smoke ? "4 MiB" : "100 MiB", smoke ? 4 << 20 : 100 << 20)] {
        Benchmark(
            "Bulk \(label) as 64 KiB reliable messages (confirmed)",
            configuration: .init(
                maxDuration: smoke ? .milliseconds(200) : .seconds(20),
                maxIterations: smoke ? 2 : size > 1 << 20 ? 5 : 100),
            closure: { benchmark in
                let pair = try await Fixture.pair()
                let piece = Data(repeating: Tag.bytes, count: 65_536)
                for _ in benchmark.scaledIterations {
                    for _ in 0..<(size / piece.count) {
                        try await pair.clientMessenger.send(piece, to: .only([pair.server]))
                    }
                    try await pair.clientMessenger.send(Data([Tag.report]), to: .only([pair.server]))
                    _ = await pair.replies.next()
                }
            })
    }

    let attachmentSize = smoke ? 4 << 20 : 100 << 20
    Benchmark(
        "Journal attachment of \(attachmentSize >> 20) MiB, added until the other node verified and stored it",
        configuration: .init(maxDuration: smoke ? .milliseconds(200) : .seconds(30), maxIterations: smoke ? 1 : 3),
        closure: { benchmark in
            let pair = try await Fixture.pair()
            var random = ChaChaRandomGenerator(seed: 9)
            let content = Data(random.bytes(count: attachmentSize))
            let serverJournal = Journal(session: pair.serverSession)
            let clientJournal = Journal(session: pair.clientSession)
            for _ in benchmark.scaledIterations {
                let attachment = try await clientJournal.add(content)
                let atServer = await Fixture.attachment(attachment.id, in: serverJournal)
                for await progress in atServer.progressUpdates where progress.isFinal {}
                try await clientJournal.remove(attachment)
            }
        })

    Benchmark(
        "Join: a new node starts, joins by ticket and leaves",
        configuration: .init(
            metrics: [.wallClock, .mallocCountTotal], maxDuration: smoke ? .milliseconds(200) : .seconds(10),
            maxIterations: smoke ? 2 : 50),
        closure: { benchmark in
            let pair = try await Fixture.pair()
            var random = ChaChaRandomGenerator(seed: 77)
            for _ in benchmark.scaledIterations {
                let node = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "joiner"))
                let session = try await node.join(pair.ticket, as: BenchActivity.self)
                await session.leave()
                await node.shutdown()
            }
        })

    Benchmark(
        "8-node mesh: one node sends 1,000 64 B messages to all 7 others (7,000 deliveries per iteration)",
        configuration: .init(maxDuration: smoke ? .milliseconds(200) : .seconds(20), maxIterations: smoke ? 2 : 50),
        closure: { benchmark in
            let mesh = try await Fixture.mesh()
            let message = Data(repeating: Tag.count, count: 64)
            for _ in benchmark.scaledIterations {
                for _ in 0..<1_000 { try await mesh.senderMessenger.send(message) }
                try await mesh.senderMessenger.send(Data([Tag.report]))
                for _ in 0..<7 { _ = await mesh.replies.next() }
            }
        })
}

/// Message tags (first byte) of the benchmark traffic.
enum Tag {
    static let echo: UInt8 = 1
    static let count: UInt8 = 2
    static let bytes: UInt8 = 3
    static let report: UInt8 = 4
}

struct BenchActivity: GroupActivity {
    static let activityIdentifier = "org.huddle.benchmarks"
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "benchmarks", type: .generic) }
}

/// Two connected nodes (one serving: echoing, counting, confirming), and an 8-node mesh, set up once per process.
enum Fixture {
    struct Pair: Sendable {
        let ticket: Invitation
        let serverSession: GroupSession<BenchActivity>
        let clientSession: GroupSession<BenchActivity>
        let server: Participant
        let clientMessenger: Messenger
        let replies: ReplyReader
    }

    struct Mesh: Sendable {
        let senderMessenger: Messenger
        let replies: ReplyReader
    }

    /// The client's incoming messages, read by one benchmark at a time (benchmarks run sequentially).
    final class ReplyReader: @unchecked Sendable {
        private var iterator: MessageStream<Data>.AsyncIterator

        init(_ messenger: Messenger) {
            iterator = messenger.messages(of: Data.self).makeAsyncIterator()
        }

        func next() async -> Data? { await iterator.next()?.0 }
    }

    nonisolated(unsafe) private static var cachedPair: Pair?
    nonisolated(unsafe) private static var cachedMesh: Mesh?

    static func node(_ name: String, seed: UInt64) async throws -> HuddleNode {
        var random = ChaChaRandomGenerator(seed: seed)
        return try await HuddleNode.start(.init(identity: Identity(using: &random), name: name))
    }

    /// Answers every member: echoes probes, and after a report message sends back what it counted.
    static func serve(_ session: GroupSession<BenchActivity>) {
        let messenger = Messenger(session: session)
        Task {
            var counted: [String: Int] = [:]
            for await (data, context) in messenger.messages(of: Data.self) {
                switch data.first {
                case Tag.echo: _ = try? await messenger.send(data, to: .only([context.source]))
                case Tag.count, Tag.bytes: counted[context.source.id, default: 0] += data.count
                case Tag.report:
                    let total = counted.removeValue(forKey: context.source.id) ?? 0
                    _ = try? await messenger.send(Data(String(total).utf8), to: .only([context.source]))
                default: continue
                }
            }
        }
    }

    static func pair() async throws -> Pair {
        if let cachedPair { return cachedPair }
        let serverNode = try await node("server", seed: 1)
        let clientNode = try await node("client", seed: 2)
        let serverSession = try await serverNode.activate(BenchActivity())
        try await serverSession.join()
        serve(serverSession)
        let ticket = try await serverSession.makeInvitation()
        let clientSession = try await clientNode.join(ticket, as: BenchActivity.self)
        let server = clientSession.activeParticipants.first { $0 != clientSession.localParticipant }!
        let messenger = Messenger(session: clientSession)
        let pair = Pair(
            ticket: ticket, serverSession: serverSession, clientSession: clientSession, server: server,
            clientMessenger: messenger, replies: ReplyReader(messenger))
        cachedPair = pair
        return pair
    }

    static func mesh() async throws -> Mesh {
        if let cachedMesh { return cachedMesh }
        var nodes: [HuddleNode] = []
        for index in 0..<8 { nodes.append(try await node("mesh-\(index)", seed: 100 + UInt64(index))) }
        let first = try await nodes[0].activate(BenchActivity())
        try await first.join()
        let ticket = try await first.makeInvitation()
        var sessions = [first]
        for node in nodes.dropFirst() { sessions.append(try await node.join(ticket, as: BenchActivity.self)) }
        while !sessions.allSatisfy({ $0.activeParticipants.count == 8 }) { try await Task.sleep(for: .milliseconds(5)) }
        for session in sessions.dropFirst() { serve(session) }
        let messenger = Messenger(session: first)
        let mesh = Mesh(senderMessenger: messenger, replies: ReplyReader(messenger))
        cachedMesh = mesh
        return mesh
    }

    static func attachment(_ id: UUID, in journal: Journal) async -> Journal.Attachment {
        for await list in journal.attachmentUpdates {
            if let found = list.first(where: { $0.id == id }) { return found }
        }
        fatalError("the session ended")
    }
}
