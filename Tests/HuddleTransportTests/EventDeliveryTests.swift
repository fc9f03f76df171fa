import HuddleCrypto
import HuddleTestKit
import HuddleWire
import NIOConcurrencyHelpers
import Testing

@testable import HuddleProtocol
@testable import HuddleTransport

/// The driver's one way out for events, without a channel: a bare endpoint pair and an `EventDelivery`.
@Suite("Event delivery to the installed consumer")
struct EventDeliveryTests {
    /// A consumer that records its batches and answers with `wants` (called with how many batches it has seen).
    static func consumer(
        maxEvents: Int = 64, maxBytes: Int = 1 << 20, _ batches: NIOLockedValueBox<[[EndpointEvent]]>,
        wants: @escaping @Sendable (Int) -> Bool = { _ in true }
    ) -> InstalledEventHandler {
        InstalledEventHandler(
            body: { events, _, _ in
                let seen = batches.withLockedValue {
                    $0.append(events)
                    return $0.count
                }
                return wants(seen)
            }, maxEvents: maxEvents, maxBytes: maxBytes)
    }

    @Test("Before a consumer is installed events stay in the endpoint; installed, it gets them all, in order")
    func eventsWaitForTheConsumer() throws {
        var (_, b) = try EndpointPair.connected()
        var delivery = EventDelivery()
        #expect(delivery.deliver(from: &b, now: .zero) { _ in } == 0)
        let batches = NIOLockedValueBox<[[EndpointEvent]]>([])
        delivery.install(Self.consumer(maxEvents: 1, batches))
        let delivered = delivery.deliver(from: &b, now: .zero) { _ in }
        let seen = batches.withLockedValue { $0 }
        #expect(delivered > 0)
        #expect(seen.count == delivered, "one event per batch at maxEvents 1")
        #expect(seen.allSatisfy { $0.count == 1 })
        guard case .connected = seen.first?.first else {
            Issue.record("the first event is \(String(describing: seen.first))")
            return
        }
        #expect(b.pollEvent() == nil, "nothing left in the endpoint")
    }

    @Test("A consumer that wants no more gets nothing until it resumes; then the rest arrives")
    func demandHoldsEvents() throws {
        var (a, b) = try EndpointPair.connected()
        let connection = try #require(a.connectionIDs.first)
        for index in 0..<5 { _ = try a.send([UInt8(index)], on: ChannelID(3), to: connection) }
        EndpointPair.exchange(&a, &b, now: .zero)
        let batches = NIOLockedValueBox<[[EndpointEvent]]>([])
        var delivery = EventDelivery()
        delivery.install(Self.consumer(maxEvents: 2, batches) { _ in false })
        #expect(delivery.deliver(from: &b, now: .zero) { _ in } == 2)
        #expect(delivery.deliver(from: &b, now: .zero) { _ in } == 0, "paused: nothing taken")
        let resumed = delivery.resume()
        let resumedAgain = delivery.resume()
        #expect(resumed)
        #expect(!resumedAgain, "resuming twice changes nothing")
        #expect(delivery.deliver(from: &b, now: .zero) { _ in } == 2, "one batch, then paused again")
        let messages = batches.withLockedValue { $0 }.joined().compactMap { event -> UInt8? in
            if case .message(_, _, let bytes) = event { return bytes.first }
            return nil
        }
        #expect(messages == Array(0..<UInt8(messages.count)), "in order")
    }

    @Test("At the byte limit a batch ends after the message that reaches it")
    func batchesKeepToTheByteLimit() throws {
        var (a, b) = try EndpointPair.connected()
        let connection = try #require(a.connectionIDs.first)
        for index in 0..<6 {
            _ = try a.send([UInt8](repeating: UInt8(index), count: 100), on: ChannelID(3), to: connection)
        }
        EndpointPair.exchange(&a, &b, now: .zero)
        let batches = NIOLockedValueBox<[[EndpointEvent]]>([])
        var delivery = EventDelivery()
        delivery.install(Self.consumer(maxBytes: 150, batches))
        _ = delivery.deliver(from: &b, now: .zero) { _ in }
        let sizes = batches.withLockedValue { $0 }.map { batch in
            batch.reduce(0) { total, event in
                if case .message(_, _, let bytes) = event { return total + bytes.count }
                return total
            }
        }
        #expect(sizes.reduce(0, +) == 600)
        #expect(sizes.allSatisfy { $0 <= 200 }, "a batch stops once it holds 150 bytes or more: \(sizes)")
    }

    @Test("Unsent reports come first, one per destination, with their tags in order; closes are announced")
    func unsentReportsFirstAndClosesAnnounced() throws {
        var (a, b) = try EndpointPair.connected()
        let connection = try #require(b.connectionIDs.first)
        var delivery = EventDelivery()
        let peer = a.staticKey
        delivery.reportUnsent(connection: connection, peer: peer, channel: ChannelID(1), bytes: 10, tag: 7)
        delivery.reportUnsent(connection: nil, peer: peer, channel: ChannelID(2), bytes: 5, tag: 9)
        delivery.reportUnsent(connection: connection, peer: peer, channel: ChannelID(1), bytes: 20, tag: 8)
        #expect(delivery.hasUnsentReports)
        b.close(connection, code: .noError, reason: "test", now: .zero)
        EndpointPair.exchange(&a, &b, now: .zero)
        let batches = NIOLockedValueBox<[[EndpointEvent]]>([])
        delivery.install(Self.consumer(batches))
        var closed: [ConnectionID] = []
        _ = delivery.deliver(from: &b, now: .zero) { closed.append($0) }
        let events = Array(batches.withLockedValue { $0 }.joined())
        #expect(!delivery.hasUnsentReports)
        #expect(
            events.prefix(2) == [
                .unsent(
                    UnsentMessages(
                        connection: connection, peer: peer, channel: ChannelID(1), count: 2, bytes: 30, tags: [7, 8])),
                .unsent(
                    UnsentMessages(connection: nil, peer: peer, channel: ChannelID(2), count: 1, bytes: 5, tags: [9])),
            ])
        #expect(closed == [connection])
        #expect(events.contains { if case .closed(connection, _, _, _) = $0 { true } else { false } })
    }

    @Test("When the driver closes, the last events reach a consumer that wanted no more")
    func finalEventsIgnoreDemand() throws {
        var (a, b) = try EndpointPair.connected()
        let batches = NIOLockedValueBox<[[EndpointEvent]]>([])
        var delivery = EventDelivery()
        delivery.install(Self.consumer(maxEvents: 1, batches) { _ in false })
        #expect(delivery.deliver(from: &b, now: .zero) { _ in } == 1)
        let connection = try #require(b.connectionIDs.first)
        b.close(connection, code: .noError, reason: "closing", now: .zero)
        EndpointPair.exchange(&a, &b, now: .zero)  // the CLOSE goes out, as the handler flushes it before the events
        let final = delivery.deliverFinal(from: &b, now: .zero) { _ in }
        #expect(final >= 1)
        #expect(batches.withLockedValue { $0 }.last?.contains { if case .closed = $0 { true } else { false } } == true)
    }
}
