import DequeModule
import HuddleCrypto
import HuddleProtocol
@_spi(Testing) import HuddleTransport
import HuddleWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// A test failure with a message (thrown so a failing step ends the test instead of hanging it).
struct TransportTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, failing with a timeout error after `limit` (the body is cancelled: event reads and suspended sends
/// end on cancellation, so a hang fails the test instead of blocking the run).
func withTimeout<T: Sendable>(
    _ limit: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw TransportTestFailure("\(what) did not finish within \(limit)")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// Two drivers on loopback that know each other as peers (no connection yet).
struct DriverPair: Sendable {
    let a: UDPEndpointDriver
    let b: UDPEndpointDriver

    /// Binds two drivers on `host` (port 0) with the given transport settings and authorises each as the other's
    /// peer.
    static func make(
        host: String, transportA: TransportConfiguration, transportB: TransportConfiguration,
        group: any EventLoopGroup, seed: UInt64
    ) async throws -> DriverPair {
        var random = ChaChaRandomGenerator(seed: seed)
        let identityA = Identity(using: &random)
        let identityB = Identity(using: &random)
        let presharedKey = SecureBytes(count: 32, using: &random)
        let macSecret = SecureBytes(count: 32, using: &random)
        let prologue = Array("huddle-transport-tests".utf8)
        let placeholderClock = TAI64N(seconds: 0, nanoseconds: 0)
        var configA = EndpointConfiguration(
            identity: identityA, prologue: prologue, wallClockAtOrigin: placeholderClock)
        var configB = EndpointConfiguration(
            identity: identityB, prologue: prologue, wallClockAtOrigin: placeholderClock)
        configA.connection.idleTimeout = .seconds(30)
        configB.connection.idleTimeout = .seconds(30)
        var transportA = transportA
        var transportB = transportB
        transportA.host = host
        transportB.host = host
        let a = try await UDPEndpointDriver.bind(configuration: configA, transport: transportA, group: group)
        let b: UDPEndpointDriver
        do {
            b = try await UDPEndpointDriver.bind(configuration: configB, transport: transportB, group: group)
        } catch {
            await a.close()
            throw error
        }
        try await a.addPeer(
            PeerCredentials(staticKey: b.staticKey, presharedKey: presharedKey, macSecret: macSecret))
        try await b.addPeer(
            PeerCredentials(staticKey: a.staticKey, presharedKey: presharedKey, macSecret: macSecret))
        return DriverPair(a: a, b: b)
    }

    func close() async {
        await a.close()
        await b.close()
    }
}

/// Binds a pair, runs `body` within `limit`, and always closes the drivers and shuts the event loops down.
func withDriverPair(
    host: String = "127.0.0.1", transportA: TransportConfiguration = TransportConfiguration(),
    transportB: TransportConfiguration = TransportConfiguration(), limit: Duration = .seconds(60),
    seed: UInt64 = 1, _ body: @escaping @Sendable (DriverPair) async throws -> Void
) async throws {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    var failure: (any Error)?
    do {
        let pair = try await DriverPair.make(
            host: host, transportA: transportA, transportB: transportB, group: group, seed: seed)
        do {
            try await withTimeout(limit, "the test body") { try await body(pair) }
        } catch {
            failure = error
        }
        await pair.close()
    } catch {
        failure = failure ?? error
    }
    try await group.shutdownGracefully()
    if let failure { throw failure }
}

/// Reads one driver's events in order, from one task: a consumer installed with `handleEvents`, the path the library
/// takes too. It holds at most `capacity` events for the test; past that it tells the driver it wants no more, so
/// messages stay in the endpoint and withhold flow-control credit from the sender (a slow reader), until the test
/// has read the buffer below a quarter of it.
struct EventReader {
    private let buffer: EventBuffer

    /// Installs the reader as `driver`'s event handler (replacing any installed before).
    init(_ driver: UDPEndpointDriver, capacity: Int = 32) async throws {
        let buffer = EventBuffer(driver: driver, capacity: capacity)
        try await driver.handleEvents(maxEvents: max(capacity / 2, 1)) { events, _, _ in buffer.append(events) }
        self.buffer = buffer
    }

    /// The next event; throws if the task is cancelled while waiting.
    mutating func next() async throws -> EndpointEvent {
        try await buffer.next()
    }

    /// The events received and not read yet.
    var buffered: [EndpointEvent] { buffer.buffered }

    /// Skips to the next `.connected` and returns its connection.
    mutating func connected() async throws -> ConnectionID {
        while true {
            if case .connected(let id, _) = try await next() { return id }
        }
    }

    /// The next reliable message, skipping deliveries and connections; throws on `.closed`.
    mutating func message() async throws -> (channel: ChannelID, bytes: [UInt8]) {
        while true {
            switch try await next() {
            case .message(_, let channel, let bytes): return (channel, bytes)
            case .closed(_, _, let reason, _):
                throw TransportTestFailure("connection closed: \(String(describing: reason))")
            default: continue
            }
        }
    }

    /// Skips to the next `.closed` and returns its reason.
    mutating func closed() async throws -> ProtocolError? {
        while true {
            if case .closed(_, _, let reason, _) = try await next() { return reason }
        }
    }
}

/// The events an ``EventReader`` holds, filled on the driver's event loop and read by the test's task.
final class EventBuffer: Sendable {
    private struct State {
        var events = Deque<EndpointEvent>()
        var reader: CheckedContinuation<EndpointEvent, any Error>?
        /// Whether the buffer told the driver it wants no more.
        var paused = false
    }

    private let state = NIOLockedValueBox(State())
    private let driver: UDPEndpointDriver
    private let capacity: Int

    init(driver: UDPEndpointDriver, capacity: Int) {
        self.driver = driver
        self.capacity = max(capacity, 1)
    }

    /// The events received and not read yet.
    var buffered: [EndpointEvent] { state.withLockedValue { Array($0.events) } }

    /// Takes a batch from the driver; returns whether it wants more.
    func append(_ events: [EndpointEvent]) -> Bool {
        state.withLockedValue { state in
            var events = events[...]
            if let reader = state.reader, let first = events.popFirst() {
                state.reader = nil
                reader.resume(returning: first)
            }
            state.events.append(contentsOf: events)
            state.paused = state.events.count >= capacity
            return !state.paused
        }
    }

    /// The oldest event, waiting for one if there is none; asks the driver for more once the buffer is low again.
    func next() async throws -> EndpointEvent {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let resume = state.withLockedValue { state -> Bool in
                    if let event = state.events.popFirst() {
                        continuation.resume(returning: event)
                    } else if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        state.reader = continuation
                    }
                    guard state.paused, state.events.count <= capacity / 4 else { return false }
                    state.paused = false
                    return true
                }
                if resume { driver.resumeEvents() }
            }
        } onCancel: {
            let reader = state.withLockedValue { state in
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume(throwing: CancellationError())
        }
    }
}

/// Deterministic message contents: every byte depends on the sequence number and offset, so reordering,
/// truncation or mixing shows.
func patternMessage(sequence: Int, size: Int) -> [UInt8] {
    var state = UInt64(truncatingIfNeeded: sequence) &* 0x9E37_79B9_7F4A_7C15 &+ 1
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
        var offset = 0
        while offset < size {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            var word = state
            let take = min(8, size - offset)
            withUnsafeBytes(of: &word) { bytes in
                for index in 0..<take { buffer[offset + index] = bytes[index] }
            }
            offset += take
        }
        initialized = size
    }
}

/// Whether `::1` can be bound here (some containers have no IPv6 loopback).
let ipv6LoopbackAvailable: Bool = {
    let descriptor = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
    }
    return result == 0
}()
