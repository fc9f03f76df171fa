import Foundation
import HuddleCLITestSupport
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

#if canImport(Glibc)
    import Glibc
#endif

/// A ticket holder floods a member with valid-`mac1` initiations from many ports (issue 16, the join-blocking flood):
/// above the load threshold the member demands cookies, and a legitimate joiner, which gets a cookie reply under the
/// invitation's key like everyone else, still joins during the flood.
@Suite("Joining during an initiation flood over loopback UDP")
struct JoinFloodTests {
    /// Initiations per second the flood sends (a third under a sanitizer, whose slowdown would otherwise make the
    /// member itself the bottleneck; still 13x the 128/s load threshold), and from how many source ports.
    static let rate = Int(5_000 / TestTiming.slowdown)
    static let ports = 200

    /// `count` distinct initiations to `member` under the invitation's credentials, each from a throwaway identity.
    static func initiations(to member: Invitation.Member, invitation: Invitation, count: Int) throws -> [[UInt8]] {
        let credentials = try SessionKeys.joinerCredentials(
            invitationSecret: invitation.secret, member: member.staticKey)
        return try (0..<count).map { index in
            var random = ChaChaRandomGenerator(seed: 0xF100D + UInt64(index))
            let configuration = EndpointConfiguration(
                identity: Identity(using: &random), prologue: HuddleNode.prologue,
                wallClockAtOrigin: TAI64N(seconds: 1_700_000_000, nanoseconds: 0))
            var endpoint = Endpoint(configuration: configuration, generator: random)
            try endpoint.addPeer(credentials)
            try endpoint.connect(to: member.staticKey, at: member.address, now: .zero)
            guard let (_, datagram) = endpoint.pollTransmit(now: .zero) else { throw FloodError.noInitiation }
            return datagram
        }
    }

    enum FloodError: Error { case noInitiation, socket(Int32) }

    /// Sends `datagrams` round-robin from `ports` loopback sockets to `port` at `rate` per second until `stop` is
    /// set; returns how many went out.
    static func flood(
        _ datagrams: [[UInt8]], to port: UInt16, stop: StopFlag
    ) throws -> Int {
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        for _ in 0..<Self.ports {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard fd >= 0 else { throw FloodError.socket(errno) }
            sockets.append(fd)
        }
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = port.bigEndian
        destination.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var sent = 0
        let start = ContinuousClock.now
        while !stop.isSet {
            // Keep to the rate: send what is due, then sleep a millisecond.
            let due = Int(Double(Self.rate) * (ContinuousClock.now - start).seconds)
            while sent < due {
                let datagram = datagrams[sent % datagrams.count]
                let fd = sockets[sent % sockets.count]
                _ = datagram.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &destination) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
                sent += 1
            }
            usleep(1000)
        }
        return sent
    }

    @Test("S-flood: at 5,000 valid-mac1 initiations/s from 200 ports, a legitimate joiner still joins during the flood")
    func joinDuringFlood() async throws {
        let host = try await startNode("flooded", seed: 900)
        let joiner = try await startNode("legit", seed: 901)
        defer { Task { for node in [host, joiner] { await node.shutdown() } } }
        let session = try await host.activate(DrawTogether(canvas: "flood"))
        try await session.join()
        let invitation = try Invitation(parsing: try await session.makeInvitation(validFor: .seconds(600)).ticket)
        let member = try #require(invitation.members.first)
        let datagrams = try Self.initiations(to: member, invitation: invitation, count: Self.ports)

        let stop = StopFlag()
        defer { stop.set() }
        let flood = Task {
            try await OwnThread.run("flood") { try Self.flood(datagrams, to: member.address.port, stop: stop) }
        }
        // Let the flood push the member over its load threshold first.
        try await Task.sleep(for: .milliseconds(500))
        let clock = ContinuousClock()
        let started = clock.now
        let joined: GroupSession<DrawTogether>
        do {
            // Alone the join takes 12 ms, and 0.24 s with two busy loops taking both cores (2026-11-29). Inside the
            // full unit suite's process it took 12-25 s (the flooded node's event loop shares that process with a
            // hundred other nodes), so `make test` runs this suite on its own. The flood lasts until the join
            // completes either way.
            joined = try await withTimeout(TestTiming.seconds(10), "joining during the flood") {
                try await joiner.join(invitation, as: DrawTogether.self)
            }
        } catch {
            let statistics = try await host.driver.perform { endpoint, _ in endpoint.statistics }
            let joinerStatistics = try await joiner.driver.perform { endpoint, _ in endpoint.statistics }
            Issue.record("no join during the flood: host \(statistics), joiner \(joinerStatistics)")
            throw error
        }
        let took = clock.now - started
        stop.set()
        let sent = try await flood.value
        let statistics = try await host.driver.perform { endpoint, _ in endpoint.statistics }
        print(
            "join during a flood of \(sent) initiations (\(Self.rate)/s, \(Self.ports) ports): joined in \(took), "
                + "cookie replies sent \(statistics.cookieRepliesSent)")
        #expect(joined.activeParticipants.count == 2)
        #expect(statistics.cookieRepliesSent > 0, "the member was under load and answered with cookies")
        let joinerStatistics = try await joiner.driver.perform { endpoint, _ in endpoint.statistics }
        #expect(joinerStatistics.cookieRepliesAccepted >= 1, "the joiner got in through the cookie path")
        // The flood runs until the join completes: before the fix the joiner never got in while it lasted (no
        // cookie for joiners, every pending slot held by replayed initiations), so the timeout above failed the test.
        // Alone this join takes well under a second; under the full suite's load, seconds (printed above).
    }
}

/// A flag one task sets and another polls.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
