import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// A CLOSE carries a final ACK (issue 11): a peer that closes right after receiving messages, before its delayed ACK
/// went out, still confirms them, so its sender does not report delivered messages as undelivered.
@Suite("CLOSE confirms what the closing side received")
struct CloseAcknowledgementTests {
    @Test("Messages received just before a close are acknowledged by the CLOSE packet, not reported undelivered")
    func closeCarriesFinalAck() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        let toB = try #require(a.connectionID(for: b.staticKey))
        for index in 0..<3 { _ = try a.send([UInt8(index)], on: ConnectionRestartTests.channel, to: toB) }
        // a's packets reach b, and b hands the messages to its application; b sends nothing before it closes (its
        // ACK is delayed by up to max_ack_delay).
        let now = Instant.zero + .milliseconds(1)
        for datagram in EndpointPair.drain(&a, now: now) {
            b.handle(datagram: datagram, from: EndpointPair.address(1), now: now)
        }
        #expect(ConnectionRestartTests.messages(&b) == [[0], [1], [2]])
        let toA = try #require(b.connectionID(for: a.staticKey))
        b.close(toA, code: .noError, reason: "leaving", now: now)
        let closing = EndpointPair.drain(&b, now: now)
        #expect(closing.count == 1, "one packet: the final ACK and the CLOSE")
        for datagram in closing { a.handle(datagram: datagram, from: EndpointPair.address(2), now: now) }
        let closed = EndpointPair.events(&a).compactMap { event -> [UndeliveredMessage]? in
            if case .closed(_, _, _, let undelivered) = event { return undelivered }
            return nil
        }
        #expect(closed == [[]], "a learns all three arrived: nothing is reported undelivered")
    }

    @Test("A message the closing side never received is still reported")
    func unreceivedStillReported() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        let toB = try #require(a.connectionID(for: b.staticKey))
        _ = try a.send([1], on: ConnectionRestartTests.channel, to: toB)
        let now = Instant.zero + .milliseconds(1)
        _ = EndpointPair.drain(&a, now: now)  // lost
        let toA = try #require(b.connectionID(for: a.staticKey))
        b.close(toA, code: .noError, reason: "leaving", now: now)
        for datagram in EndpointPair.drain(&b, now: now) {
            a.handle(datagram: datagram, from: EndpointPair.address(2), now: now)
        }
        let closed = EndpointPair.events(&a).compactMap { event -> Int? in
            if case .closed(_, _, _, let undelivered) = event { return undelivered.count }
            return nil
        }
        #expect(closed == [1])
    }

    @Test("A message acknowledged behind a lost one is reported with it: the closing side never delivered it")
    func acknowledgedBehindGapReported() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        let toB = try #require(a.connectionID(for: b.staticKey))
        let now = Instant.zero + .milliseconds(1)
        _ = try a.send([0], on: ConnectionRestartTests.channel, to: toB)
        _ = EndpointPair.drain(&a, now: now)  // lost
        _ = try a.send([1], on: ConnectionRestartTests.channel, to: toB)
        for datagram in EndpointPair.drain(&a, now: now) {
            b.handle(datagram: datagram, from: EndpointPair.address(1), now: now)
        }
        // b holds message 1 in its reorder buffer, waiting for 0, and acknowledges the packet that carried it (the
        // CLOSE carries that ACK); the buffer goes with the connection.
        #expect(ConnectionRestartTests.messages(&b).isEmpty)
        let toA = try #require(b.connectionID(for: a.staticKey))
        b.close(toA, code: .noError, reason: "restarted", now: now)
        for datagram in EndpointPair.drain(&b, now: now) {
            a.handle(datagram: datagram, from: EndpointPair.address(2), now: now)
        }
        var delivered: [MessageSequence] = []
        var undelivered: [[MessageSequence]] = []
        for event in EndpointPair.events(&a) {
            switch event {
            case .delivered(_, _, let sequence, _): delivered.append(sequence)
            case .closed(_, _, _, let messages): undelivered.append(messages.map(\.sequence))
            default: break
            }
        }
        #expect(delivered.isEmpty, "message 1 was acknowledged, never delivered")
        #expect(undelivered == [[MessageSequence(0), MessageSequence(1)]])
    }

    @Test("Tags come back in order with completions, and with every undelivered message, acknowledged or not")
    func tagsComeBack() throws {
        var (a, b) = try ConnectionRestartTests.connected()
        _ = EndpointPair.events(&a)
        _ = EndpointPair.events(&b)
        let toB = try #require(a.connectionID(for: b.staticKey))
        var now = Instant.zero + .milliseconds(1)
        // 10 and 11 arrive and complete; 12 is lost; 13 arrives behind the gap (acknowledged, not delivered); 14
        // is never sent before the close.
        for tag in [10, 11] as [UInt64] {
            _ = try a.send([UInt8(tag)], on: ConnectionRestartTests.channel, to: toB, tag: tag)
        }
        for datagram in EndpointPair.drain(&a, now: now) {
            b.handle(datagram: datagram, from: EndpointPair.address(1), now: now)
        }
        // b may hold its acknowledgement for up to its ACK delay: run its timer past that.
        now = now + .milliseconds(30)
        b.handleTimeout(now: now)
        for datagram in EndpointPair.drain(&b, now: now) {
            a.handle(datagram: datagram, from: EndpointPair.address(2), now: now)
        }
        let completed = EndpointPair.events(&a).compactMap { event -> UInt64? in
            if case .delivered(_, _, _, let tag) = event { return tag }
            return nil
        }
        #expect(completed == [10, 11])
        now = now + .milliseconds(1)
        _ = try a.send([12], on: ConnectionRestartTests.channel, to: toB, tag: 12)
        _ = EndpointPair.drain(&a, now: now)  // lost
        _ = try a.send([13], on: ConnectionRestartTests.channel, to: toB, tag: 13)
        for datagram in EndpointPair.drain(&a, now: now) {
            b.handle(datagram: datagram, from: EndpointPair.address(1), now: now)
        }
        let toA = try #require(b.connectionID(for: a.staticKey))
        b.close(toA, code: .noError, reason: "restarted", now: now)
        _ = try a.send([14], on: ConnectionRestartTests.channel, to: toB, tag: 14)
        for datagram in EndpointPair.drain(&b, now: now) {
            a.handle(datagram: datagram, from: EndpointPair.address(2), now: now)
        }
        let undelivered = EndpointPair.events(&a).compactMap { event -> [UInt64]? in
            if case .closed(_, _, _, let messages) = event { return messages.map(\.tag) }
            return nil
        }
        #expect(undelivered == [[12, 13, 14]])
    }
}
