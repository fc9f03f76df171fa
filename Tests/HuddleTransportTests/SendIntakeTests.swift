import HuddleCrypto
import HuddleTestKit
import HuddleWire
import Testing

@testable import HuddleProtocol
@testable import HuddleTransport

/// The send intake without a channel: messages queued as a sender would, handed to a bare endpoint pair.
@Suite("Send intake: queued messages to the endpoint")
struct SendIntakeTests {
    /// What the handler lends the intake.
    struct Lent {
        var endpoint: Endpoint
        var statistics = TransportStatistics(endpoint: EndpointStatistics())
        var events = EventDelivery()
    }

    static func queue(bytes: Int = 1 << 20, messages: Int = 4_096) -> OutboundQueue {
        OutboundQueue(limits: .init(bytes: bytes, messages: messages))
    }

    /// Offers an enqueued (not awaited) message for `peer`, as `UDPEndpointDriver.enqueue(_:on:toPeer:tag:)` does.
    static func enqueue(_ bytes: [UInt8], to peer: X25519PublicKey, tag: UInt64 = 0, on queue: OutboundQueue) {
        var send = PendingSend(
            message: bytes, channel: ChannelID(4), destination: .peer(peer), ticket: nil, completion: nil)
        send.tag = tag
        guard case .accepted = queue.offer(send) else {
            Issue.record("the queue refused a message")
            return
        }
    }

    /// The messages `b` received on channel 4, in order.
    static func received(_ b: inout Endpoint) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while let event = b.pollEvent() {
            if case .message(_, ChannelID(4), let bytes) = event { messages.append(bytes) }
        }
        return messages
    }

    @Test("Queued messages reach the peer's connection in order, and their allowance returns to the queue")
    func handsOverInOrder() throws {
        var (a, b) = try EndpointPair.connected()
        let queue = Self.queue()
        var intake = SendIntake(queue: queue)
        for index in 0..<50 { Self.enqueue([UInt8(index)], to: b.staticKey, on: queue) }
        #expect(queue.counters.messagesHeld == 50)
        var lent = Lent(endpoint: a)
        _ = intake.service(&lent.endpoint, &lent.statistics, &lent.events)
        a = lent.endpoint
        #expect(queue.counters.messagesHeld == 0, "every message was handed over")
        #expect(lent.statistics.outboundDrains == 1)
        EndpointPair.exchange(&a, &b, now: .zero)
        #expect(Self.received(&b) == (0..<50).map { [UInt8($0)] })
    }

    @Test("A full send window parks messages, counted once per stall; acknowledgements let them go, in order")
    func fullWindowParks() throws {
        var (a, b) = try EndpointPair.connected()
        let queue = Self.queue(bytes: 64 << 20)
        var intake = SendIntake(queue: queue)
        let size = 200_000
        let count = 200  // 40 MB: far more than one channel's send window
        for index in 0..<count {
            Self.enqueue([UInt8](repeating: UInt8(index), count: size), to: b.staticKey, on: queue)
        }
        var lent = Lent(endpoint: a)
        _ = intake.service(&lent.endpoint, &lent.statistics, &lent.events)
        #expect(lent.statistics.sendsSuspended == 1)
        #expect(intake.pendingChannels.count == 1)
        let parked = intake.pendingChannels.first?.sends.count ?? 0
        #expect(parked > 0 && parked < count)
        // Servicing again without acknowledgements changes nothing and counts no second stall.
        _ = intake.service(&lent.endpoint, &lent.statistics, &lent.events)
        #expect(lent.statistics.sendsSuspended == 1)
        #expect(intake.pendingChannels.first?.sends.count == parked)
        var arrived: [UInt8] = []
        var now = Instant.zero
        for _ in 0..<10_000 where arrived.count < count {
            // The timers send delayed acknowledgements and paced packets.
            lent.endpoint.handleTimeout(now: now)
            b.handleTimeout(now: now)
            EndpointPair.exchange(&lent.endpoint, &b, now: now)
            arrived += Self.received(&b).map { $0.first! }
            _ = intake.service(&lent.endpoint, &lent.statistics, &lent.events)
            now = now + .milliseconds(1)
        }
        a = lent.endpoint
        #expect(arrived == (0..<count).map { UInt8(truncatingIfNeeded: $0) })
        #expect(intake.pendingChannels.isEmpty)
    }

    @Test("A message for a peer without a connection is reported unsent with its tag; closing reports the rest")
    func unsentReported() throws {
        var (a, b) = try EndpointPair.connected()
        let queue = Self.queue()
        var intake = SendIntake(queue: queue)
        let stranger = EndpointPair.endpoint(seed: 99).staticKey
        Self.enqueue([1, 2, 3], to: stranger, tag: 42, on: queue)
        var lent = Lent(endpoint: a)
        _ = intake.service(&lent.endpoint, &lent.statistics, &lent.events)
        #expect(lent.statistics.messagesUnsent == 1)
        #expect(lent.statistics.bytesUnsent == 3)
        #expect(lent.events.hasUnsentReports)
        // Two more queued, then the driver closes before they are taken: both reported, the queue refuses more.
        Self.enqueue([4], to: b.staticKey, tag: 7, on: queue)
        Self.enqueue([5], to: b.staticKey, tag: 8, on: queue)
        intake.failAll(&lent.endpoint, &lent.statistics, &lent.events)
        #expect(lent.statistics.messagesUnsent == 3)
        guard
            case .refused(.driverClosed) = queue.offer(
                PendingSend(
                    message: [6], channel: ChannelID(4), destination: .peer(b.staticKey), ticket: nil,
                    completion: nil))
        else {
            Issue.record("a closed queue accepted a message")
            return
        }
        a = lent.endpoint
        EndpointPair.exchange(&a, &b, now: .zero)
        #expect(Self.received(&b).isEmpty, "nothing of what failed was sent")
    }
}
