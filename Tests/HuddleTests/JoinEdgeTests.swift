import Foundation
import HuddleCrypto
import HuddleProtocol
@_spi(Testing) import HuddleTransport
import Testing

@testable import Huddle

/// A numbered message from one joiner, so receivers can check exactly-once and order per sender.
struct JoinProbe: Codable, Sendable, Equatable {
    var round: Int
    var sequence: Int
}

/// Where users get hurt first (issue 11): messages sent right after joining, while the new member's connections to
/// the others are still being set up, and how long a joiner takes to reach everyone.
@Suite("Sending at the edges of membership over loopback UDP")
struct JoinEdgeTests {
    /// Established connections of `node` (handshake complete), by peer.
    static func establishedPeers(_ node: HuddleNode) async -> Set<X25519PublicKey> {
        let peers =
            (try? await node.driver.perform { endpoint, _ in
                endpoint.connectionIDs.compactMap { id -> X25519PublicKey? in
                    guard let connection = endpoint.connection(id), connection.state == .established else { return nil }
                    return connection.peer
                }
            }) ?? []
        return Set(peers)
    }

    /// Joins per run: `HUDDLE_JOINS` (200 for the figures in docs/PERFORMANCE.md), else 12.
    static var joins: Int { ProcessInfo.processInfo.environment["HUDDLE_JOINS"].flatMap(Int.init) ?? 12 }

    @Test("G1: a joiner's messages sent right after join() reach every member exactly once and in order")
    func sendRightAfterJoining() async throws {
        let (nodes, sessions) = try await MeshTests.mesh(4, seedBase: 400, prefix: "j")
        do {
            try await joinRounds(nodes: nodes, sessions: sessions)
        } catch {
            await MeshTests.shutDown(nodes)
            throw error
        }
        await MeshTests.shutDown(nodes)
    }

    private func joinRounds(nodes: [HuddleNode], sessions: [GroupSession<DrawTogether>]) async throws {
        let perJoiner = 10
        let invitation = try Invitation(parsing: try await sessions[0].makeInvitation(validFor: .seconds(600)).ticket)
        let memberKeys = Set(sessions.map(\.localParticipant.staticKey))
        // Every member collects the probes it receives, per round; none may be reported undelivered.
        let inboxes = sessions.map { session in
            let messenger = Messenger(session: session)
            let failures = session.deliveryFailures
            let received = Task { () -> [JoinProbe] in
                var probes: [JoinProbe] = []
                for await (probe, _) in messenger.messages(of: JoinProbe.self) { probes.append(probe) }
                return probes
            }
            let failed = Task { () -> [DeliveryFailure] in
                var reports: [DeliveryFailure] = []
                for await failure in failures { reports.append(failure) }
                return reports
            }
            return (received, failed)
        }
        var meshTimes: [Duration] = []
        let clock = ContinuousClock()
        for round in 0..<Self.joins {
            let joiner = try await startNode("n\(round)", seed: 10_000 + UInt64(round))
            let started = clock.now
            let session = try await withTimeout(20, "joiner \(round) joins") {
                try await joiner.join(invitation, as: DrawTogether.self)
            }
            // At once, before any connection but the sponsor's is up: the roster is already the audience. (The
            // previous round's joiner may still be in it: its departure was acknowledged, not yet processed, when
            // the sponsor wrote the WELCOME; it is reported left shortly.)
            let audience = Set(session.activeParticipants.map(\.staticKey))
            #expect(
                audience.isSuperset(of: memberKeys) && audience.count <= 6,
                "round \(round): \(session.activeParticipants)")
            let messenger = Messenger(session: session)
            for sequence in 0..<perJoiner { try await messenger.send(JoinProbe(round: round, sequence: sequence)) }
            let joinerKey = session.localParticipant.staticKey
            var meshed = false
            while clock.now - started < .seconds(20) {
                let own = await Self.establishedPeers(joiner)
                var all = own == memberKeys
                if all {
                    for node in nodes where !(await Self.establishedPeers(node)).contains(joinerKey) {
                        all = false
                        break
                    }
                }
                if all {
                    meshed = true
                    break
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            if !meshed {
                var report = "round \(round): no full mesh within 20 s;"
                for (index, node) in ([joiner] + nodes).enumerated() {
                    let state = try? await node.driver.perform { endpoint, _ in
                        let connections = endpoint.connectionIDs.map { id in
                            let connection = endpoint.connection(id)!
                            return "\(connection.peer.bytes.prefix(2).map { String($0) }):\(connection.state)"
                        }
                        return "\(connections) \(endpoint.statistics)"
                    }
                    report += "\n node \(index == 0 ? "joiner" : "\(index - 1)"): \(state ?? "?")"
                }
                Issue.record(Comment(rawValue: report))
            }
            meshTimes.append(clock.now - started)
            // Leaving waits for the probes to be acknowledged.
            await session.leave()
            await joiner.shutdown()
        }
        for (index, session) in sessions.enumerated() {
            await session.leave()
            let probes = await inboxes[index].0.value
            let failures = await inboxes[index].1.value
            #expect(failures.isEmpty, "member \(index): \(failures)")
            for round in 0..<Self.joins {
                let got = probes.filter { $0.round == round }.map(\.sequence)
                #expect(got == Array(0..<perJoiner), "member \(index), round \(round): received \(got)")
            }
        }
        let sorted = meshTimes.sorted()
        func percentile(_ p: Double) -> Double {
            let value = sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
            return Double(value.components.seconds) * 1e3 + Double(value.components.attoseconds) / 1e15
        }
        print(
            "join-to-full-mesh over \(sorted.count) joins into a 4-member session: p50 "
                + String(format: "%.1f ms, p99 %.1f ms, max %.1f ms", percentile(0.5), percentile(0.99), percentile(1)))
    }
}
