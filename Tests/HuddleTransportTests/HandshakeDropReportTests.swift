import HuddleCrypto
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import Testing

@testable import HuddleProtocol
@_spi(Testing) @testable import HuddleTransport

/// A dropped initiation gets no reply, so the log is where a failed handshake shows why (issue 19).
@Suite("Why handshakes were dropped, in the log")
struct HandshakeDropReportTests {
    @Test("One line per interval with the drops since the last, by reason; drops in between go into the next")
    func rateLimitedByReason() {
        var statistics = EndpointStatistics()
        var report = HandshakeDropReport(from: statistics)
        #expect(report.check(statistics, now: .zero) == nil, "nothing dropped")
        statistics.mac1Failures = 3
        statistics.handshakeFailures = 1
        let first = report.check(statistics, now: .zero)
        #expect(first?.map(\.reason) == ["wrong_mac1", "handshake_failed"])
        #expect(first?.map(\.count) == [3, 1])
        statistics.mac1Failures = 10
        #expect(report.check(statistics, now: .zero + .milliseconds(999)) == nil, "within the interval")
        statistics.staleTimestampDropped = 2
        let second = report.check(statistics, now: .zero + .seconds(1))
        #expect(second?.map(\.reason) == ["wrong_mac1", "stale_timestamp"])
        #expect(second?.map(\.count) == [7, 2], "the drops within the interval are counted here")
    }

    /// Captures what is logged.
    struct CapturingLogHandler: LogHandler {
        let lines: NIOLockedValueBox<[(message: String, metadata: Logger.Metadata)]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            lines.withLockedValue { $0.append(("\(event.message)", event.metadata ?? [:])) }
        }
    }

    @Test("A peer with another prologue: the responder logs handshake_failed instead of staying silent")
    func otherPrologueIsLogged() async throws {
        let lines = NIOLockedValueBox<[(message: String, metadata: Logger.Metadata)]>([])
        let logger = Logger(label: "drops") { _ in CapturingLogHandler(lines: lines) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var random = ChaChaRandomGenerator(seed: 77)
        let (identityA, identityB) = (Identity(using: &random), Identity(using: &random))
        let psk = SecureBytes(count: 32, using: &random)
        let mac = SecureBytes(count: 32, using: &random)
        let clock = TAI64N(seconds: 0, nanoseconds: 0)
        let a = try await UDPEndpointDriver.bind(
            configuration: EndpointConfiguration(
                identity: identityA, prologue: Array("other/1".utf8), wallClockAtOrigin: clock),
            group: group)
        let b = try await UDPEndpointDriver.bind(
            configuration: EndpointConfiguration(
                identity: identityB, prologue: Array("huddle/1".utf8), wallClockAtOrigin: clock),
            group: group, logger: logger)
        try await a.addPeer(PeerCredentials(staticKey: b.staticKey, presharedKey: psk, macSecret: mac))
        try await b.addPeer(PeerCredentials(staticKey: a.staticKey, presharedKey: psk, macSecret: mac))
        _ = try await a.connect(to: b.staticKey, at: b.localAddress)
        var logged: Logger.Metadata?
        for _ in 0..<100 where logged == nil {
            try await Task.sleep(for: .milliseconds(50))
            logged = lines.withLockedValue { $0.first { $0.message.hasPrefix("handshake messages dropped") }?.metadata }
        }
        await a.close()
        await b.close()
        try await group.shutdownGracefully()
        #expect(logged?["handshake_failed"] == "1", "\(String(describing: logged))")
    }
}
