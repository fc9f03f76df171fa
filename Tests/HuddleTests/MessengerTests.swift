import Foundation
import HuddleWire
import Testing

@testable import Huddle

/// Version 1 of a message type, as an older app knows it.
struct Cursor: Codable, Sendable, Equatable, MessageTypeNaming {
    static let messageTypeName = "test.cursor"
    var x: Double
    var y: Double
}

/// Version 2, as a newer app sends it under the same name: one more field.
struct CursorV2: Codable, Sendable, Equatable, MessageTypeNaming {
    static let messageTypeName = "test.cursor"
    var x: Double
    var y: Double
    var pressure: Double
}

@Suite("Messenger delivery modes and message types", .serialized)
struct MessengerTests {
    /// Two joined nodes.
    static func pair(
        _ seed: UInt64
    ) async throws -> (HuddleNode, HuddleNode, GroupSession<DrawTogether>, GroupSession<DrawTogether>) {
        let host = try await startNode("host", seed: seed)
        let guest = try await startNode("guest", seed: seed + 1)
        let session = try await host.activate(DrawTogether(canvas: "c"))
        try await session.join()
        let ticket = try await session.makeInvitation()
        let guestSession = try await guest.join(ticket, as: DrawTogether.self)
        #expect(await eventually("connected") { session.activeParticipants.count == 2 })
        return (host, guest, session, guestSession)
    }

    @Test("A stream gets only its own type; other types and undecodable payloads are skipped, not fatal")
    func typesAreSeparate() async throws {
        let (host, guest, session, guestSession) = try await Self.pair(21)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let sender = Messenger(session: session)
        let receiver = Messenger(session: guestSession)
        let cursors = Task {
            var got: [Cursor] = []
            for await (cursor, _) in receiver.messages(of: Cursor.self) {
                got.append(cursor)
                if got.count == 3 { break }
            }
            return got
        }
        let strokes = Task { () -> Stroke? in
            for await (stroke, _) in receiver.messages(of: Stroke.self) { return stroke }
            return nil
        }
        try await sender.send(Cursor(x: 1, y: 1))
        try await sender.send(Stroke(id: 7, points: []))
        try await sender.send(Data([0xFF, 0x00]))  // raw bytes: not a Cursor
        // A newer peer's version with an extra field decodes as the old one (the field is ignored).
        try await sender.send(CursorV2(x: 2, y: 2, pressure: 0.5))
        try await sender.send(Cursor(x: 3, y: 3))
        let got = try await withTimeout(10, "cursors") { await cursors.value }
        #expect(got == [Cursor(x: 1, y: 1), Cursor(x: 2, y: 2), Cursor(x: 3, y: 3)])
        let stroke = try await withTimeout(10, "stroke") { await strokes.value }
        #expect(stroke == Stroke(id: 7, points: []))
    }

    @Test("A newer receiver skips an older version it cannot decode and keeps going")
    func newerReceiverSkipsOldVersion() async throws {
        let (host, guest, session, guestSession) = try await Self.pair(51)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let receiver = Messenger(session: guestSession)
        let got = Task { () -> [CursorV2] in
            var got: [CursorV2] = []
            for await (cursor, _) in receiver.messages(of: CursorV2.self) {
                got.append(cursor)
                if got.count == 1 { break }
            }
            return got
        }
        let sender = Messenger(session: session)
        try await sender.send(Cursor(x: 1, y: 1))  // no pressure: a CursorV2 decoder cannot read it
        try await sender.send(CursorV2(x: 2, y: 2, pressure: 1))
        let received = try await withTimeout(10, "v2 cursors") { await got.value }
        #expect(received == [CursorV2(x: 2, y: 2, pressure: 1)])
    }

    @Test("Several messengers share a session: reliable and unreliable both deliver, each to its own streams")
    func reliableAndUnreliable() async throws {
        let (host, guest, session, guestSession) = try await Self.pair(31)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let reliable = Messenger(session: session)
        let unreliable = Messenger(session: session, deliveryMode: .unreliable)
        let guestReliable = Messenger(session: guestSession)
        let guestUnreliable = Messenger(session: guestSession, deliveryMode: .unreliable)
        let datagrams = Task { () -> (Cursor, String)? in
            for await (cursor, context) in guestUnreliable.messages(of: Cursor.self) {
                return (cursor, context.source.name)
            }
            return nil
        }
        let messages = Task { () -> Cursor? in
            for await (cursor, _) in guestReliable.messages(of: Cursor.self) { return cursor }
            return nil
        }
        // Unreliable messages may be lost, even on loopback in principle: send a few.
        for index in 0..<5 {
            try await unreliable.send(Cursor(x: Double(index), y: -1))
            try await Task.sleep(for: .milliseconds(5))
        }
        try await reliable.send(Cursor(x: 100, y: 100))
        let datagram = try await withTimeout(10, "unreliable cursor") { await datagrams.value }
        #expect(datagram?.0.y == -1)
        #expect(datagram?.1 == "host")
        let message = try await withTimeout(10, "reliable cursor") { await messages.value }
        #expect(message == Cursor(x: 100, y: 100))
    }

    @Test("Sending to someone who is not an active participant is a typed error")
    func notAParticipant() async throws {
        let (host, guest, session, guestSession) = try await Self.pair(41)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let stranger = Participant(id: "0000", name: "nobody", staticKeyBytes: [UInt8](repeating: 9, count: 32))
        do {
            try await Messenger(session: session).send(Cursor(x: 0, y: 0), to: .only([stranger]))
            Issue.record("no error")
        } catch HuddleError.notAParticipant(let who) {
            #expect(who.name == "nobody")
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        _ = guestSession
    }

    @Test(
        "A burst of unreliable sends to .only(participant) returns without waiting; every hand-over runs; receipts say unconfirmed"
    )
    func unreliableBurst() async throws {
        let (host, guest, session, guestSession) = try await Self.pair(51)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let unreliable = Messenger(session: session, deliveryMode: .unreliable)
        let received = Task { () -> Int in
            var count = 0
            for await _ in Messenger(session: guestSession, deliveryMode: .unreliable).messages(of: Cursor.self) {
                count += 1
                if count == 10 { break }
            }
            return count
        }
        // More sends than the gate admits at once: past its limit a send waits for the loop instead of failing.
        var receipts: [MessageReceipt] = []
        for index in 0..<(4 * DatagramSendGate.limit) {
            receipts.append(
                try await unreliable.send(Cursor(x: Double(index), y: 0), to: .only(guestSession.localParticipant)))
        }
        #expect(receipts.map(\.id) == Array(1...UInt64(receipts.count)))
        #expect(
            receipts.allSatisfy { $0.recipients == [guestSession.localParticipant] && $0.deliveryMode == .unreliable })
        #expect(try await unreliable.outcome(of: receipts[0]) == .unconfirmed)
        #expect(await eventually("every admitted hand-over ran") { host.engine.datagramGate.count == 0 })
        #expect(try await withTimeout(10, "unreliable cursors") { await received.value } == 10)
    }

    @Test("A message on a channel this version does not use is reported as undecodable, not dropped silently")
    func unknownChannelReported() async throws {
        let (host, guest, session, guestSession) = try await Self.pair(61)
        defer {
            Task {
                await host.shutdown(); await guest.shutdown()
            }
        }
        let drops = guestSession.messageDrops
        let reported = Task { () -> MessageDrop? in
            for await drop in drops { return drop }
            return nil
        }
        // What a newer peer might send: a reliable message on channel 99, which no messenger or journal uses.
        let guestKey = guestSession.localParticipant.staticKey
        let sent = try await session.engine.perform(in: session.context) { _, endpoint, _ in
            guard let id = endpoint.connectionID(for: guestKey) else { return false }
            return (try? endpoint.send([1, 2, 3], on: ChannelID(99), to: id)) != nil
        }
        #expect(sent)
        let drop = try await withTimeout(10, "the drop report") { await reported.value }
        #expect(drop?.reason == .undecodable && drop?.reliable == true, "\(String(describing: drop))")
        #expect(drop?.participant == session.localParticipant)
    }

    @Test("The datagram gate admits its limit, then refuses until a place is given back")
    func datagramGateLimit() {
        let gate = DatagramSendGate()
        for _ in 0..<DatagramSendGate.limit { #expect(gate.admit()) }
        #expect(!gate.admit())
        gate.release()
        #expect(gate.admit())
        #expect(gate.count == DatagramSendGate.limit)
    }
}
