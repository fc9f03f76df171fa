import Foundation
import HuddleCLITestSupport
import HuddleCrypto
import HuddleWire
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// `huddle relay` as a process on loopback, driven by hand-made clients (PROTOCOL section 10): it registers only
/// clients that prove their key, forwards only between registered clients, and caps a greedy one at its rate.
@Suite("huddle relay")
struct RelayProcessTests {
    /// A UDP socket on 127.0.0.1 with a short receive timeout.
    final class LoopbackSocket: @unchecked Sendable {
        let fd: Int32
        let port: UInt16

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr in
                    bind(descriptor, sockaddr, length) == 0 && getsockname(descriptor, sockaddr, &length) == 0
                }
            }
            guard descriptor >= 0, bound else { throw HuddleProcessError.commandFailed("socket: errno \(errno)") }
            fd = descriptor
            port = UInt16(bigEndian: address.sin_port)
            var timeout = timeval(tv_sec: 0, tv_usec: 300_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var size: Int32 = 8 << 20
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }

        deinit { close(fd) }

        func send(_ bytes: [UInt8], to port: UInt16) {
            var destination = sockaddr_in()
            destination.sin_family = sa_family_t(AF_INET)
            destination.sin_port = port.bigEndian
            destination.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            _ = bytes.withUnsafeBytes { raw in
                withUnsafePointer(to: &destination) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }

        /// The next datagram, or `nil` after the timeout.
        func receive() -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: 2048)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return count > 0 ? Array(buffer[0..<count]) : nil
        }
    }

    /// A client: its key and socket.
    struct Client: Sendable {
        let key: X25519PrivateKey
        let socket: LoopbackSocket

        init(seed: UInt64) throws {
            var random = ChaChaRandomGenerator(seed: seed)
            key = X25519PrivateKey(using: &random)
            socket = try LoopbackSocket()
        }

        /// RELAY_REGISTER for `claimedKey` with `token` and `mac`.
        static func register(_ claimedKey: [UInt8], token: [UInt8], mac: [UInt8]) throws -> [UInt8] {
            try RelayRegister(clientKey: claimedKey, token: token, mac: mac).encoded()
        }

        /// Registers with the relay at `port` (PROTOCOL section 10); returns the RELAY_REGISTERED datagram.
        func registerProperly(relay port: UInt16) throws -> [UInt8]? {
            let zeros = [UInt8](repeating: 0, count: 16)
            socket.send(try Self.register(key.publicKey.bytes, token: zeros, mac: zeros), to: port)
            guard let reply = socket.receive(), let challenge = try? RelayChallenge(decoding: reply) else { return nil }
            var hash = try BLAKE2b(
                outputLength: 32, key: try key.sharedSecret(with: X25519PublicKey(bytes: challenge.relayKey)))
            hash.update(Array("huddle relay v1".utf8))
            let k = hash.finalize()
            var packet = try Self.register(key.publicKey.bytes, token: challenge.token, mac: zeros)
            var mac = try BLAKE2b(outputLength: 16, key: k)
            mac.update(packet[0..<RelayRegister.macOffset])
            packet.replaceSubrange(RelayRegister.macOffset..<RelayRegister.encodedLength, with: mac.finalize())
            socket.send(packet, to: port)
            return socket.receive()
        }

        /// A RELAY_SEND of `size` bytes to `destination`.
        static func envelope(to destination: X25519PrivateKey, size: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0x5A, count: size)
            bytes[0] = PacketType.relaySend.rawValue
            bytes[1] = 0
            bytes[2] = 0
            bytes[3] = 0
            bytes.replaceSubrange(4..<36, with: destination.publicKey.bytes)
            return bytes
        }
    }

    static func startRelay(_ cluster: HuddleCluster, _ extra: [String] = []) async throws -> (HuddleProcess, UInt16) {
        let relay = try cluster.start("relay", ["relay", "--json", "--listen", "127.0.0.1:0"] + extra)
        let listening = try await relay.waitForEvent("relay-listening", within: 20)
        let port = UInt16(listening["address"]?.split(separator: ":").last ?? "") ?? 0
        #expect(port != 0)
        return (relay, port)
    }

    @Test("A client that proves its key is registered and told its address; one naming a key it lacks is refused")
    func refusesUnauthenticatedClients() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (relay, port) = try await Self.startRelay(cluster)
        let alice = try Client(seed: 1)
        let registered = try #require(try alice.registerProperly(relay: port))
        let confirmation = try RelayRegistered(decoding: registered)
        #expect(confirmation.observed.bytes == [127, 0, 0, 1] && confirmation.observed.port == alice.socket.port)

        // Mallory claims Alice's key: the token is real (Mallory receives at its address), the MAC cannot be.
        let mallory = try Client(seed: 2)
        let zeros = [UInt8](repeating: 0, count: 16)
        mallory.socket.send(try Client.register(alice.key.publicKey.bytes, token: zeros, mac: zeros), to: port)
        let challenge = try RelayChallenge(decoding: try #require(mallory.socket.receive()))
        mallory.socket.send(
            try Client.register(
                alice.key.publicKey.bytes, token: challenge.token, mac: [UInt8](repeating: 1, count: 16)),
            to: port)
        #expect(mallory.socket.receive() == nil, "no confirmation for a forged key")
        // Not registered, so not forwarded: Mallory's packet for Alice never reaches her; Mallory hears a challenge.
        mallory.socket.send(Client.envelope(to: alice.key, size: 200), to: port)
        #expect(alice.socket.receive() == nil)
        #expect(mallory.socket.receive()?.count == RelayChallenge.encodedLength)

        relay.signal(SIGTERM)
        let stopped = try await relay.waitForEvent("relay-stopped", within: 10)
        #expect(stopped["refused"] == "1" && stopped["forwardedPackets"] == "0", "\(stopped)")
        // The operator saw Alice register (her key and address), and nothing for Mallory.
        let registrations = relay.events.filter { $0.name == "relay-registered" }
        let aliceKey = alice.key.publicKey.bytes.prefix(8).map { String(format: "%02x", $0) }.joined()
        #expect(registrations.map { $0["key"] } == [aliceKey], "\(relay.events)")
        #expect(registrations.first?["address"] == "127.0.0.1:\(alice.socket.port)", "\(relay.events)")
    }

    @Test("A greedy client gets its rate and burst and no more; another client still gets through")
    func capsGreedyClient() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let rate = 200_000
        let burst = 20_000
        let (relay, port) = try await Self.startRelay(cluster, ["--rate", "\(rate)", "--burst", "\(burst)"])
        let greedy = try Client(seed: 3)
        let receiver = try Client(seed: 4)
        let polite = try Client(seed: 5)
        for client in [greedy, receiver, polite] { #expect(try client.registerProperly(relay: port) != nil) }
        // The greedy client sends 1,236-byte packets as fast as it can for two seconds (far over 200 kB/s).
        let packet = Client.envelope(to: receiver.key, size: 1236)
        let politeKey = polite.key.publicKey.bytes
        let clock = ContinuousClock()
        let started = clock.now
        // Both loops block (recv with a timeout, usleep), so each has a thread of its own, not one of the pool's.
        let counter = Task {
            try await OwnThread.run("relay counter") { () -> (bytes: Int, polite: Int) in
                var bytes = 0
                var polite = 0
                while let datagram = receiver.socket.receive() {
                    bytes += datagram.count
                    // RELAY_DELIVER names the sender: the polite client's packet, forwarded despite the flood.
                    if Array(datagram[4..<36]) == politeKey { polite += 1 }
                }
                return (bytes, polite)
            }
        }
        // About 5 MB/s, 25 times the rate: greedy, yet well within what loopback and the relay's socket take, so
        // what the relay drops is its own decision, not the kernel's.
        // The time is taken where the loop ends: the task resumes later under load, and that wait is not sending.
        let (offered, elapsed) = try await OwnThread.run("greedy sender") { () -> (Int, Double) in
            var offered = 0
            var politeSent = false
            while clock.now - started < .seconds(2) {
                for _ in 0..<10 { greedy.socket.send(packet, to: port) }
                offered += 10 * packet.count
                usleep(2_500)
                if !politeSent, clock.now - started > .seconds(1) {
                    // The polite client's one packet, in the middle of the flood.
                    polite.socket.send(Client.envelope(to: receiver.key, size: 300), to: port)
                    politeSent = true
                }
            }
            return (offered, (clock.now - started) / .seconds(1))
        }
        let (received, politeDelivered) = try await counter.value
        #expect(politeDelivered == 1)
        print(
            "relay: offered \(offered) bytes in \(elapsed) s, forwarded \(received) (rate \(rate) B/s, burst \(burst))")
        #expect(offered > 10 * rate)
        #expect(Double(received) <= Double(rate) * (elapsed + 0.35) + Double(burst) + 1536)
        #expect(Double(received) >= Double(rate) * elapsed * 0.8)
        relay.signal(SIGTERM)
        let stopped = try await relay.waitForEvent("relay-stopped", within: 10)
        #expect(Int(stopped["rateLimitedPackets"] ?? "") ?? 0 > 1000, "\(stopped)")
    }
}
