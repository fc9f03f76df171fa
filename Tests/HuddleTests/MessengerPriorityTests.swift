import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Huddle

/// Issue 37, item 2: a messenger chooses where its reliable messages wait. Small interactive messages sent behind a
/// backlog of large bulk-priority ones overtake it; on one priority they wait their turn (FIFO), which is what the
/// control run shows, so the first result is the priority's doing.
@Suite("Messenger priorities", .serialized)
struct MessengerPriorityTests {
    /// What the receiver saw when the last stroke arrived, and the order of everything.
    struct Run {
        /// Snapshots whose `send` had returned (queued) before the first stroke was sent.
        var queuedBefore: Int
        /// Snapshots received when the first stroke was sent.
        var arrivedBefore: Int
        /// Snapshots received when the last stroke arrived.
        var snapshotsBeforeLastStroke: Int
        var snapshots: [Int]
        var strokes: [Int]
    }

    static let snapshotCount = 80
    static let strokeCount = 10

    static func run(bulk priority: Messenger.Priority, seed: UInt64) async throws -> Run {
        let (host, guest, session, guestSession) = try await MessengerTests.pair(seed)
        defer {
            Task {
                await host.shutdown()
                await guest.shutdown()
            }
        }
        let bulk = Messenger(session: session, priority: priority)
        let interactive = Messenger(session: session)
        let receiver = Messenger(session: guestSession)
        // Raw messages on one stream: the order they arrive in is the order the receiver sees, with no skew between
        // two readers. The first byte tells a snapshot (0) from a stroke (1); the second is its index.
        let log = NIOLockedValueBox((snapshots: [Int](), strokes: [Int](), atLastStroke: -1))
        let reader = Task {
            for await (bytes, _) in receiver.messages(of: Data.self) {
                let done = log.withLockedValue {
                    if bytes.first == 0 { $0.snapshots.append(Int(bytes[bytes.startIndex + 1])) }
                    if bytes.first == 1 {
                        $0.strokes.append(Int(bytes[bytes.startIndex + 1]))
                        if $0.strokes.count == strokeCount { $0.atLastStroke = $0.snapshots.count }
                    }
                    return $0.snapshots.count == snapshotCount && $0.strokes.count == strokeCount
                }
                if done { return }
            }
        }
        let blob = [UInt8](repeating: 7, count: 150_000)
        // The strokes go from the same task right after the 60th snapshot is queued: no wait on a loaded machine
        // lets the backlog drain first. (Queuing returns at once; the transport sends behind it.)
        let backlog = Task { () -> (queued: Int, arrived: Int) in
            var before = (queued: 0, arrived: 0)
            for index in 0..<snapshotCount {
                try await bulk.send(Data([0, UInt8(index)] + blob))
                if index == 59 {
                    before = (index + 1, log.withLockedValue { $0.snapshots.count })
                    for stroke in 0..<strokeCount { try await interactive.send(Data([1, UInt8(stroke)])) }
                }
            }
            return before
        }
        let (queuedBefore, arrivedBefore) = try await backlog.value
        #expect(
            await eventually("everything arrives", within: 60) {
                log.withLockedValue { $0.snapshots.count == snapshotCount && $0.strokes.count == strokeCount }
            })
        reader.cancel()
        let seen = log.withLockedValue { $0 }
        return Run(
            queuedBefore: queuedBefore, arrivedBefore: arrivedBefore, snapshotsBeforeLastStroke: seen.atLastStroke,
            snapshots: seen.snapshots,
            strokes: seen.strokes)
    }

    @Test("Strokes sent behind a backlog of bulk snapshots overtake it; each priority keeps its own order")
    func interactiveOvertakesBulk() async throws {
        let run = try await Self.run(bulk: .bulk, seed: 3801)
        #expect(run.snapshots == Array(0..<Self.snapshotCount))
        #expect(run.strokes == Array(0..<Self.strokeCount))
        // Of the queued snapshots still to come when the strokes were sent, at most half arrived before the last
        // stroke: only what the connection already had in flight gets there first (FIFO delivers all of them first,
        // as the control shows). A machine too loaded to have a backlog left by then cannot tell; it must have 20.
        let pending = run.queuedBefore - run.arrivedBefore
        try #require(pending >= 20, "only \(pending) snapshots were still to come when the strokes were sent")
        let overtaken = run.snapshotsBeforeLastStroke - run.arrivedBefore
        #expect(overtaken <= pending / 2, "\(overtaken) of \(pending) pending snapshots arrived before the last stroke")
        print("priority: \(overtaken) of \(pending) pending snapshots arrived before the last stroke")
    }

    @Test("Control: on one priority the strokes wait behind every snapshot queued before them")
    func onePriorityIsFIFO() async throws {
        let run = try await Self.run(bulk: .interactive, seed: 3803)
        #expect(run.snapshots == Array(0..<Self.snapshotCount))
        #expect(run.strokes == Array(0..<Self.strokeCount))
        #expect(
            run.snapshotsBeforeLastStroke >= run.queuedBefore,
            "\(run.snapshotsBeforeLastStroke) of \(run.queuedBefore) queued snapshots arrived before the last stroke")
    }

    @Test("A duplicating messenger's small messages go twice on the wire and arrive once each, in order")
    func duplicatedArriveOnce() async throws {
        let (host, guest, session, guestSession) = try await MessengerTests.pair(3805)
        defer {
            Task {
                await host.shutdown()
                await guest.shutdown()
            }
        }
        let sender = Messenger(session: session, redundancy: .duplicate)
        let receiver = Messenger(session: guestSession)
        // Read until a last marker, so a copy delivered as a second message would show among the others.
        let reader = Task { () -> [UInt8] in
            var seen: [UInt8] = []
            for await (bytes, _) in receiver.messages(of: Data.self) {
                seen.append(bytes.first ?? 0)
                if bytes.first == 255 { break }
            }
            return seen
        }
        for index in 0..<50 { try await sender.send(Data([UInt8(index)])) }
        try await sender.send(Data([255]))
        let seen = try await withTimeout(10, "51 messages") { await reader.value }
        #expect(seen == (0..<50).map { UInt8($0) } + [255])
        let guestKey = guestSession.localParticipant.staticKey
        let duplicated = try await session.engine.perform(in: session.context) { _, endpoint, _ in
            endpoint.connectionID(for: guestKey).flatMap { endpoint.connection($0)?.statistics.fragmentsDuplicated }
        }
        #expect((duplicated ?? 0) >= 51, "\(duplicated ?? 0) fragments duplicated")
    }
}
