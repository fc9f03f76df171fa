// Loopback bulk throughput of two UDPEndpointDrivers, with and without UDP GSO/GRO.
//
// Usage: swift run -c release huddle-transport-bench [MiB per run, default 256] [runs per mode, default 3]
// A measurement tool, not a test: it prints numbers and never fails on them.
import HuddleCrypto
import HuddleProtocol
@_spi(Testing) import HuddleTransport
import HuddleWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

// Output goes through print; run it to completion (it is short) rather than killing it, or buffered lines are lost.
let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let mebibytes = arguments.first ?? 256
let runs = arguments.dropFirst().first ?? 3
let messageSize = 256 * 1024
let channel = ChannelID(200)

/// One transfer of `mebibytes` from a fresh driver to another; returns seconds and both sides' statistics.
func transfer(offload: Bool, seed: UInt64) async throws -> (Double, TransportStatistics, TransportStatistics) {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    var random = ChaChaRandomGenerator(seed: seed)
    let psk = SecureBytes(count: 32, using: &random)
    let mac = SecureBytes(count: 32, using: &random)
    var transport = TransportConfiguration()
    transport.segmentationOffload = offload
    transport.receiveOffload = offload
    let origin = TAI64N(seconds: 0, nanoseconds: 0)
    let a = try await UDPEndpointDriver.bind(
        configuration: EndpointConfiguration(
            identity: Identity(using: &random), prologue: [1], wallClockAtOrigin: origin),
        transport: transport, group: group)
    let b = try await UDPEndpointDriver.bind(
        configuration: EndpointConfiguration(
            identity: Identity(using: &random), prologue: [1], wallClockAtOrigin: origin),
        transport: transport, group: group)
    try await a.addPeer(PeerCredentials(staticKey: b.staticKey, presharedKey: psk, macSecret: mac))
    try await b.addPeer(PeerCredentials(staticKey: a.staticKey, presharedKey: psk, macSecret: mac))
    let count = mebibytes * 1024 * 1024 / messageSize
    let payload = [UInt8](repeating: 0x5A, count: messageSize)
    let clock = ContinuousClock()
    // Both sides take their events on their event loops, as a node does (the driver's one way out for events).
    let connected = a.eventLoop.makePromise(of: Void.self)
    let isConnected = NIOLockedValueBox(false)
    try await a.handleEvents { events, _, _ in
        for case .connected in events where !isConnected.withLockedValue({ $0 }) {
            isConnected.withLockedValue { $0 = true }
            connected.succeed()
        }
        return true
    }
    let finished = b.eventLoop.makePromise(of: Duration.self)
    let progress = NIOLockedValueBox((received: 0, started: ContinuousClock.Instant?.none))
    try await b.handleEvents { events, _, _ in
        progress.withLockedValue { progress in
            for event in events {
                switch event {
                case .connected: progress.started = clock.now
                case .message(_, _, let bytes):
                    precondition(bytes.count == messageSize)
                    progress.received += 1
                    if progress.received == count, let started = progress.started {
                        finished.succeed(clock.now - started)
                    }
                default: break
                }
            }
        }
        return true
    }
    let connection = try await a.connect(to: b.staticKey, at: b.localAddress)
    try await connected.futureResult.get()
    for _ in 0..<count { try await a.send(payload, on: channel, to: connection) }
    let elapsed = try await finished.futureResult.get()
    let sender = try await a.statistics()
    let receiver = try await b.statistics()
    await a.close()
    await b.close()
    try await group.shutdownGracefully()
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (seconds, sender, receiver)
}

print("loopback bulk transfer: \(mebibytes) MiB in 256 KiB messages, \(runs) runs per mode")
print(
    "kernel support: GSO \(System.supportsUDPSegmentationOffload), GRO \(System.supportsUDPReceiveOffload)")
for offload in [true, false] {
    var rates: [Double] = []
    for run in 0..<runs {
        let (seconds, sender, receiver) = try await transfer(offload: offload, seed: UInt64(run + 1))
        let rate = Double(mebibytes) * 1_048_576 / seconds / 1e6
        rates.append(rate)
        print(
            "  GSO+GRO \(offload ? "on " : "off") run \(run + 1): \(Int(rate)) MB/s (\(Int(seconds * 1000)) ms); "
                + "sent \(sender.datagramsSent) datagrams in \(sender.flushes) flushes, "
                + "\(sender.segmentedWrites) GSO writes; received \(receiver.datagramsReceived) in "
                + "\(receiver.readBatches) read batches, \(receiver.coalescedReads) GRO reads; "
                + "receiver sent \(receiver.datagramsSent) datagrams")
    }
    rates.sort()
    print("GSO+GRO \(offload ? "on" : "off"): median \(Int(rates[rates.count / 2])) MB/s")
}
