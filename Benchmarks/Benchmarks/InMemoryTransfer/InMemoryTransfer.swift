import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Two endpoints wired back to back.
public enum InMemoryTransfer {
    /// Thrown when nothing moves for 10,000 timer rounds.
    public struct Stalled: Error {}

    /// Moves `bytes` (in 64 KiB messages) from one endpoint to the other, dropping `lossRate` of the datagrams with
    /// a generator seeded by `seed`; returns the bytes delivered.
    public static func run(bytes: Int, lossRate: Double, seed: UInt64) throws -> Int {
        var random = ChaChaRandomGenerator(seed: seed)
        let identities = [Identity(using: &random), Identity(using: &random)]
        let psk = SecureBytes(count: 32, using: &random)
        let macSecret = SecureBytes(count: 32, using: &random)
        var endpoints = try identities.enumerated().map { index, identity in
            var endpoint = Endpoint(
                configuration: EndpointConfiguration(
                    identity: identity, prologue: Array("bench".utf8),
                    wallClockAtOrigin: TAI64N(seconds: 1_700_000_000, nanoseconds: 0)),
                generator: ChaChaRandomGenerator(seed: seed + UInt64(index)))
            try endpoint.addPeer(
                PeerCredentials(
                    staticKey: identities[1 - index].agreementKey.publicKey, presharedKey: psk, macSecret: macSecret))
            return endpoint
        }
        let addresses = [NetworkAddress(ipv4: 127, 0, 0, 1, port: 1), NetworkAddress(ipv4: 127, 0, 0, 2, port: 2)]
        var now = Instant.zero
        let id = try endpoints[0].connect(to: identities[1].agreementKey.publicKey, at: addresses[1], now: now)
        let message = [UInt8](repeating: 0x5A, count: 65_536)
        let total = bytes / message.count
        var queued = 0
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 1500)
        var idleRounds = 0
        while received < total {
            var moved = false
            if endpoints[0].connection(id)?.state == .established {
                while queued < total,
                    endpoints[0].connection(id)?.canSend(size: message.count, on: ChannelID(200)) == true
                {
                    _ = try endpoints[0].send(message, on: ChannelID(200), to: id)
                    queued += 1
                }
            }
            for side in 0..<2 {
                while let (_, length, _) = buffer.withUnsafeMutableBytes({
                    endpoints[side].pollTransmit(into: $0, now: now)
                }) {
                    moved = true
                    if lossRate > 0, Double(random.next() >> 11) * 0x1.0p-53 < lossRate { continue }
                    buffer.withUnsafeMutableBytes { raw in
                        endpoints[1 - side].handle(
                            datagram: UnsafeMutableRawBufferPointer(rebasing: raw[0..<length]), from: addresses[side],
                            now: now)
                    }
                }
            }
            while let event = endpoints[1].pollEvent() {
                if case .message = event { received += 1 }
            }
            while endpoints[0].pollEvent() != nil {}
            // Time moves 50 us per round, or jumps to the next timer when nothing moved.
            if moved {
                now = now + .microseconds(50)
                idleRounds = 0
            } else if let deadline = [endpoints[0].nextDeadline, endpoints[1].nextDeadline].compactMap({ $0 }).min() {
                now = max(now + .microseconds(50), deadline)
                endpoints[0].handleTimeout(now: now)
                endpoints[1].handleTimeout(now: now)
                idleRounds += 1
                if idleRounds > 10_000 { throw Stalled() }
            }
        }
        return received * message.count
    }
}
