import HuddleCrypto
import HuddleProtocol
@_spi(Testing) import HuddleTransport
import NIOConcurrencyHelpers
import NIOPosix
import Testing

/// The driver's one timer runs the timers of the layer above (``TimerClient``): at their deadline, not before, and
/// not at all while they have none.
@Suite("Timer client on the event loop's timer")
struct TimerClientTests {
    @Test("A client's timer fires once at its deadline; with no deadline nothing fires")
    func firesAtDeadline() async throws {
        var random = ChaChaRandomGenerator(seed: 11)
        let configuration = EndpointConfiguration(
            identity: Identity(using: &random), prologue: Array("timer test".utf8),
            wallClockAtOrigin: TAI64N(seconds: 0, nanoseconds: 0))
        var transport = TransportConfiguration()
        transport.host = "127.0.0.1"
        let driver = try await UDPEndpointDriver.bind(
            configuration: configuration, transport: transport, group: MultiThreadedEventLoopGroup.singleton)
        defer { Task { await driver.close() } }
        // Due 100 ms after installation; firing clears it.
        let state = NIOLockedValueBox<(deadline: Instant?, fired: [Instant], asked: Int)>((nil, [], 0))
        let installedAt = try await driver.perform { _, now in now }
        state.withLockedValue { $0.deadline = installedAt + .milliseconds(100) }
        try await driver.setTimerClient(
            TimerClient(
                deadline: { _ in
                    state.withLockedValue { state in
                        state.asked += 1
                        return state.deadline
                    }
                },
                fire: { _, now in
                    state.withLockedValue { state in
                        state.fired.append(now)
                        state.deadline = nil
                    }
                }))
        try await Task.sleep(for: .milliseconds(600))
        let (_, fired, asked) = state.withLockedValue { $0 }
        #expect(fired.count == 1)
        let firedAt = try #require(fired.first)
        #expect(firedAt >= installedAt + .milliseconds(100))
        // An idle endpoint with no peers: the deadline was asked only around the firing, not polled.
        #expect(asked < 10, "asked \(asked) times")
        try await driver.setTimerClient(nil)
    }
}
