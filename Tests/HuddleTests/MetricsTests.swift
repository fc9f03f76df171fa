import Foundation
import HuddleCrypto
import HuddleProtocol
import MetricsTestKit
import Testing

@testable import Huddle

/// The node's swift-metrics: what a session does shows up in the factory the node was given, and without a backend
/// nothing is counted at all.
@Suite("Node metrics over loopback UDP", .serialized)
struct MetricsTests {
    static func node(_ name: String, seed: UInt64, metrics: TestMetrics?) async throws -> HuddleNode {
        var random = ChaChaRandomGenerator(seed: seed)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: name)
        configuration.metricsFactory = metrics
        configuration.metricsDimensions = [("node", name)]
        return try await HuddleNode.start(configuration)
    }

    @Test("Messages, bytes, handshakes, connections, participants, RTT and the join are counted")
    func sessionIsCounted() async throws {
        let hostMetrics = TestMetrics()
        let joinerMetrics = TestMetrics()
        let host = try await Self.node("host", seed: 61, metrics: hostMetrics)
        let joiner = try await Self.node("joiner", seed: 62, metrics: joinerMetrics)
        defer { Task { for node in [host, joiner] { await node.shutdown() } } }
        let session = try await host.activate(DrawTogether(canvas: "metrics"))
        try await session.join()
        let invitation = try Invitation(parsing: try await session.makeInvitation(validFor: .seconds(600)).ticket)
        let joined = try await withTimeout(20, "joins") { try await joiner.join(invitation, as: DrawTogether.self) }
        #expect(await eventually("the host sees the joiner") { session.activeParticipants.count == 2 })

        let receiver = Messenger(session: joined)
        let received = Task {
            var count = 0
            for await _ in receiver.messages(of: Stroke.self) {
                count += 1
                if count == 10 { break }
            }
            return count
        }
        let sender = Messenger(session: session)
        for id in 0..<10 { try await sender.send(Stroke(id: id, points: [1, 2])) }
        #expect(try await withTimeout(10, "10 strokes arrive") { await received.value } == 10)
        let unreliable = Messenger(session: session, deliveryMode: .unreliable)
        for id in 0..<3 { try await unreliable.send(Stroke(id: id, points: [])) }

        await host.updateMetrics()
        await joiner.updateMetrics()
        let node = { (name: String) in [("node", name)] }
        #expect(
            hostMetrics.counterTotal(
                label: "huddle_messages_sent_total", dimensions: [("class", "reliable")] + node("host")) == 10)
        #expect(
            hostMetrics.counterTotal(
                label: "huddle_messages_sent_total", dimensions: [("class", "unreliable")] + node("host")) == 3)
        #expect(
            joinerMetrics.counterTotal(
                label: "huddle_messages_received_total", dimensions: [("class", "reliable")] + node("joiner"))
                == 10)
        #expect(hostMetrics.counterTotal(label: "huddle_message_bytes_sent_total") > 10 * 10)
        #expect(hostMetrics.counterTotal(label: "huddle_datagrams_sent_total") > 0)
        #expect(joinerMetrics.counterTotal(label: "huddle_bytes_received_total") > 0)
        #expect(joinerMetrics.counterTotal(label: "huddle_handshakes_initiated_total") >= 1)
        #expect(hostMetrics.counterTotal(label: "huddle_handshakes_completed_total") >= 1)
        #expect(try hostMetrics.expectGauge("huddle_connections", node("host")).lastValue == 1)
        #expect(try joinerMetrics.expectGauge("huddle_participants", node("joiner")).lastValue == 2)
        #expect(try hostMetrics.expectGauge("huddle_congestion_window_bytes", node("host")).lastValue ?? 0 > 0)
        #expect(try !hostMetrics.expectTimer("huddle_rtt_seconds", node("host")).values.isEmpty)
        let joins = try joinerMetrics.expectTimer("huddle_join_duration_seconds", node("joiner")).values
        #expect(joins.count == 1 && joins[0] > 0 && joins[0] < 20_000_000_000, "\(joins)")
        // The host founded the session: it never joined one.
        #expect(try hostMetrics.expectTimer("huddle_join_duration_seconds", node("host")).values.isEmpty)

        // Counters follow the totals: a second update adds only what happened since.
        let before = hostMetrics.counterTotal(label: "huddle_datagrams_sent_total")
        await host.updateMetrics()
        let after = hostMetrics.counterTotal(label: "huddle_datagrams_sent_total")
        #expect(after >= before && after - before < 20, "\(before) -> \(after)")
    }

    @Test("Without a metrics backend the node counts nothing for metrics and runs no sampling timer")
    func noBackendNoMetrics() async throws {
        let node = try await Self.node("quiet", seed: 63, metrics: nil)
        defer { Task { await node.shutdown() } }
        #expect(node.engine.metrics == nil)
    }
}
