import Foundation
import HuddleCLITestSupport
import Testing

/// `huddle doctor` against a real coturn on loopback (with two addresses, so it runs RFC 5780's tests): what it
/// reports, in what time, and its exit status when nothing answers. Behind NATs: `TurnNamespaceTests`.
@Suite("huddle doctor", .serialized)
struct DoctorProcessTests {
    /// Runs `huddle doctor --json ARGUMENTS`; returns its exit status and the `doctor` object.
    static func doctor(_ arguments: [String], in cluster: HuddleCluster) async throws -> (Int32, [String: Any]) {
        let process = try cluster.start("doctor", ["doctor", "--json"] + arguments)
        let status = try await process.waitForExit(within: 10)
        let line = try #require(process.stdoutLines.first { $0.contains("\"doctor\"") }, "\(process.stdoutLines)")
        #expect(try EventSchema.load().violations(of: line).isEmpty, "\(line)")
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        return (status, try #require(object))
    }

    @Test("On loopback: no NAT, endpoint-independent filtering, TURN over UDP and TCP, 9000-byte datagrams, under 3 s")
    func loopback() async throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn(tcp: true, rfc5780: true)
        defer { coturn.stop() }
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let relay = try cluster.start("relay", ["relay", "--json", "--listen", "127.0.0.1:0"])
        let listening = try await relay.waitForEvent("relay-listening", within: 10)
        let relayAddress = try #require(listening["address"], "\(listening)")
        let started = ContinuousClock.now
        let (status, report) = try await Self.doctor(
            [
                "--stun", "127.0.0.1:\(coturn.port)", "--turn", "ada:secret@127.0.0.1:\(coturn.port)", "--relay",
                relayAddress,
            ], in: cluster)
        // Its own measure, from its start to its report (about 0.25 s here): the process around it can take longer
        // to launch when the whole suite runs beside it on two cores (3.03 s once).
        #expect((report["elapsed_ms"] as? Double ?? .infinity) < 3000, "\(report)")
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(status == 0)
        #expect(report["mapping"] as? String == "no NAT", "\(report)")
        #expect(report["filtering"] as? String == "endpoint-independent", "\(report)")
        let local = try #require(report["local"] as? String)
        let port = try #require(local.split(separator: ":").last)
        #expect(report["reflexive"] as? [String] == ["127.0.0.1:\(port)"])
        let stun = try #require(report["stun"] as? [[String: Any]])
        #expect(stun.count == 1 && stun.first?["rfc5780"] as? Bool == true)
        let turn = try #require(report["turn"] as? [[String: Any]])
        #expect(turn.map { $0["transport"] as? String } == ["udp", "tcp"])
        for check in turn { #expect(check["relayed"] is String, "\(check)\n\(coturn.log)") }
        #expect(report["mtu_bytes"] as? Int == 9000)
        let relays = try #require(report["relays"] as? [[String: Any]])
        #expect(relays.count == 1 && relays.first?["registered"] as? Bool == true, "\(relays)")
        #expect((report["elapsed_ms"] as? Double ?? .infinity) < 3000)
    }

    @Test("Nobody answers: the doctor says so for each server, within its budget, and exits 1")
    func nobodyAnswers() async throws {
        let silent = try LoopbackUDPSocket().port
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (status, report) = try await Self.doctor(
            [
                "--stun", "127.0.0.1:\(silent)", "--turn", "ada:secret@127.0.0.1:\(silent)", "--relay",
                "127.0.0.1:\(silent)",
            ],
            in: cluster)
        #expect(status == 1)
        #expect(report["mapping"] as? String == "unknown" && report["filtering"] as? String == "unknown")
        #expect((report["reflexive"] as? [String])?.isEmpty == true)
        let turn = try #require(report["turn"] as? [[String: Any]])
        #expect(turn.count == 2 && turn.allSatisfy { $0["relayed"] is NSNull && $0["error"] is String })
        #expect(report["mtu_bytes"] is NSNull)
        #expect((report["relays"] as? [[String: Any]])?.first?["registered"] as? Bool == false)
        #expect((report["elapsed_ms"] as? Double ?? .infinity) < 3000)
    }
}
