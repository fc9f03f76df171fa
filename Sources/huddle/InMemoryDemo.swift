import HuddleCrypto
import HuddleTransport
import HuddleWire

#if canImport(Glibc)
    import Glibc
#endif

/// The in-memory demonstration behind `huddle demo`: real crypto and real wire codecs, no sockets yet.
///
/// The mac1 key and the TAI64N timestamp here follow WireGuard's construction; the protocol core will own them.
struct InMemoryDemo {
    let measureSeconds: Double
    private var random = SystemRandomGenerator()
    private let clock = ContinuousClock()

    init(measureSeconds: Double) {
        self.measureSeconds = measureSeconds
    }

    mutating func run() throws {
        let started = clock.now
        print("Huddle demo: the crypto and wire layers, in memory (huddle demo without --wire runs the UDP mesh)")
        print("")

        // 1. Identities.
        let alice = Identity(using: &random)
        let bob = Identity(using: &random)
        print("1. Identities (Ed25519 signing key + X25519 static key, bound by a signature)")
        print("   alice  \(alice.publicIdentity.fingerprint)  binding valid: \(alice.publicIdentity.hasValidBinding)")
        print("   bob    \(bob.publicIdentity.fingerprint)  binding valid: \(bob.publicIdentity.hasValidBinding)")
        print("")

        // 2. Handshake.
        let sessionKey = SecureBytes(count: 32, using: &random)
        let handshakeStarted = clock.now
        let protocolName = NoisePattern.ikpsk2.protocolName(hash: .sha256)
        print("2. Handshake: \(protocolName), pre-shared key from the session secret")
        let initiator = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .initiator, prologue: Self.prologue, staticKey: alice.agreementKey,
                remoteStaticKey: bob.agreementKey.publicKey, presharedKeys: [sessionKey]),
            using: &random)
        let responder = try NoiseHandshake(
            configuration: .init(
                pattern: .ikpsk2, role: .responder, prologue: Self.prologue, staticKey: bob.agreementKey,
                presharedKeys: [sessionKey]),
            using: &random)

        let aliceIndex = ReceiverIndex(UInt32.random(in: 1...UInt32.max, using: &random))
        let bobIndex = ReceiverIndex(UInt32.random(in: 1...UInt32.max, using: &random))
        let message1 = try initiator.writeMessage(payload: Self.tai64n() + [0, 0, 0, 0])
        var initiation = try HandshakeInitiation(
            senderIndex: aliceIndex, ephemeral: Array(message1[0..<32]), encryptedStatic: Array(message1[32..<80]),
            encryptedPayload: Array(message1[80..<112]))
        initiation.mac1 = try Self.mac1(over: initiation, to: bob.agreementKey.publicKey)
        var initiationBytes: [UInt8] = []
        try initiation.encode(into: &initiationBytes)
        print(
            "   alice -> bob  initiation \(initiationBytes.count) B (ephemeral, encrypted static key, encrypted TAI64N and resumption index, mac1)"
        )

        let received = try HandshakeInitiation(decoding: initiationBytes)
        let mac1Valid = ConstantTime.equals(
            try Self.mac1(over: received, to: bob.agreementKey.publicKey), received.mac1)
        let timestamp = try responder.readMessage(
            received.ephemeral + received.encryptedStatic + received.encryptedPayload)
        let learned = responder.remoteStaticKey == alice.agreementKey.publicKey
        print(
            "   bob: mac1 valid: \(mac1Valid); initiator's static key is alice's: \(learned); payload (timestamp, resumption index) \(Self.hex(timestamp))"
        )

        let message2 = try responder.writeMessage()
        var response = try HandshakeResponse(
            senderIndex: bobIndex, receiverIndex: received.senderIndex, ephemeral: Array(message2[0..<32]),
            encryptedNothing: Array(message2[32..<48]))
        response.mac1 = try Self.mac1(over: response, to: alice.agreementKey.publicKey)
        var responseBytes: [UInt8] = []
        try response.encode(into: &responseBytes)
        print("   bob -> alice  response \(responseBytes.count) B (ephemeral, encrypted empty payload, mac1)")
        let decodedResponse = try HandshakeResponse(decoding: responseBytes)
        _ = try initiator.readMessage(decodedResponse.ephemeral + decodedResponse.encryptedNothing)

        let aliceKeys = try initiator.split()
        let bobKeys = try responder.split()
        let handshakeTime = clock.now - handshakeStarted
        print(
            "   both: handshake hash \(Self.hex(aliceKeys.handshakeHash.prefix(8)))... equal: \(aliceKeys.handshakeHash == bobKeys.handshakeHash)"
        )
        print(
            "   handshake secrets wiped after split: \(initiator.secretsAreWiped && responder.secretsAreWiped); took \(Self.format(handshakeTime))"
        )
        print("")

        // 3. Transport packets.
        let aliceSend = try Self.key(aliceKeys.sending)
        let bobReceive = try Self.key(bobKeys.receiving)
        let bobSend = try Self.key(bobKeys.sending)
        let aliceReceive = try Self.key(aliceKeys.receiving)
        print("3. Transport: ChaCha20-Poly1305, nonce = packet number, 16-byte header as associated data")
        let lines = ["hello bob", "this packet is end-to-end encrypted", "and authenticated", "🎉"]
        var packets: [[UInt8]] = []
        for (number, line) in lines.enumerated() {
            let frame = OwnedFrame.message(
                channel: ChannelID(0), sequence: MessageSequence(UInt64(number)), offset: 0,
                totalLength: line.utf8.count, data: Array(line.utf8))
            let packet = try Self.seal(
                frames: [frame], receiver: bobIndex, packetNumber: UInt64(number), key: aliceSend)
            packets.append(packet)
        }
        var delivered: [UInt64] = []
        for packet in packets {
            let (number, frames) = try Self.open(packet, key: bobReceive)
            for case .message(let channel, let sequence, _, _, let data) in frames {
                let text = String(decoding: data, as: UTF8.self)
                print(
                    "   bob received packet \(number) (\(packet.count) B): MESSAGE channel \(channel) seq \(sequence): \"\(text)\""
                )
            }
            delivered.append(number)
        }
        let ack = OwnedFrame.ack(AckFrame(ackDelay: 25, ranges: try AckRanges(0...UInt64(delivered.count - 1))))
        let ackPacket = try Self.seal(frames: [ack], receiver: aliceIndex, packetNumber: 0, key: bobSend)
        let (_, ackFrames) = try Self.open(ackPacket, key: aliceReceive)
        if case .ack(let decodedAck) = ackFrames.first {
            print(
                "   alice received an ACK (\(ackPacket.count) B): packets \(Array(decodedAck.ranges).map { "\($0.lowerBound)...\($0.upperBound)" }.joined(separator: ", ")) acknowledged"
            )
        }
        print("")

        // 4. Bad input.
        print("4. Bad input is rejected before anything is delivered")
        var flipped = packets[2]
        flipped[flipped.count / 2] ^= 0x04
        print("   one bit flipped in packet 2:            \(Self.outcome { try Self.open(flipped, key: bobReceive) })")
        var renumbered = packets[1]
        renumbered[8] ^= 0x07
        print(
            "   packet 1 replayed as packet 6:          \(Self.outcome { try Self.open(renumbered, key: bobReceive) })")
        print(
            "   packet 3 truncated by 17 bytes:         \(Self.outcome { try Self.open(Array(packets[3].dropLast(17)), key: bobReceive) })"
        )
        let mallory = SymmetricKey(using: &random)
        let forged = try Self.seal(frames: [.ping], receiver: bobIndex, packetNumber: 9, key: mallory)
        print("   packet sealed under a stranger's key:   \(Self.outcome { try Self.open(forged, key: bobReceive) })")
        var strangerInitiation = initiation
        strangerInitiation.mac1 = [UInt8](repeating: 0x42, count: 16)
        let strangerValid = ConstantTime.equals(
            try Self.mac1(over: strangerInitiation, to: bob.agreementKey.publicKey), strangerInitiation.mac1)
        print(
            "   initiation with a wrong mac1:           \(strangerValid ? "accepted (!)" : "dropped after one keyed hash, before any Diffie-Hellman")"
        )
        let truncatedInitiation = Array(initiationBytes.dropLast())
        print(
            "   147-byte initiation:                    \(Self.outcome { try HandshakeInitiation(decoding: truncatedInitiation) })"
        )
        print("")

        // 5. Throughput.
        print("5. Crypto throughput on this machine (one core, in place; a timing loop, not a benchmark suite)")
        for size in [1200, 65536] {
            let seal = measure(bytesPerOperation: size, bufferSize: size + 16) { iteration, buffer in
                buffer.withUnsafeMutableBytes { raw in
                    _ = ChaChaPoly.sealInPlace(
                        combined: raw, plaintextLength: size, nonce: .init(counter: iteration),
                        authenticating: UnsafeRawBufferPointer(start: nil, count: 0), key: aliceSend)
                }
            }
            print("   ChaCha20-Poly1305 seal \(Self.pad(size)) B: \(seal)")
        }
        let chunk = [UInt8](repeating: 0x5A, count: 65536)
        let hash = measure(bytesPerOperation: 65536, bufferSize: 1) { _, _ in
            _ = BLAKE2b.hash(chunk, outputLength: 32)
        }
        print("   BLAKE2b-256           65536 B: \(hash)")
        print("")
        print("Done in \(Self.format(clock.now - started)).")
        print("The protocol core built on these runs in the network simulator: swift run -c release huddle-sim --list.")
        print("That was the protocol layer alone; huddle demo (without --wire) runs the same over a UDP mesh.")
    }

    // MARK: - Helpers

    static let prologue = Array("huddle demo v1".utf8)

    /// A WireGuard-style mac1: keyed BLAKE2b-128 over the message up to mac1, keyed by a hash of the receiver's
    /// static public key, so only someone who knows that key can make the receiver do any Diffie-Hellman work.
    static func mac1(over message: some WireEncodable, to receiver: X25519PublicKey) throws -> [UInt8] {
        let key = BLAKE2b.hash(Array("mac1----".utf8) + receiver.bytes, outputLength: 32)
        var bytes: [UInt8] = []
        try message.encode(into: &bytes)
        let covered = message is HandshakeInitiation ? HandshakeInitiation.mac1Offset : HandshakeResponse.mac1Offset
        return try BLAKE2b.hash(bytes[0..<covered], outputLength: 16, key: key)
    }

    static func key(_ state: CipherState) throws -> SymmetricKey {
        guard let key = state.key else { throw CryptoError.missingKey("a transport key") }
        return key
    }

    static func seal(
        frames: [OwnedFrame], receiver: ReceiverIndex, packetNumber: UInt64, key: SymmetricKey
    ) throws -> [UInt8] {
        let header = TransportHeader(receiverIndex: receiver, packetNumber: PacketNumber(packetNumber))
        let payloadLength = frames.reduce(0) { $0 + $1.encodedLength }
        var datagram = [UInt8](
            repeating: 0, count: TransportHeader.encodedLength + payloadLength + ChaChaPoly.tagLength)
        try datagram.withUnsafeMutableBytes { raw in
            var writer = ByteWriter(raw)
            try header.encode(into: &writer)
            for frame in frames { try frame.encode(into: &writer) }
            let headerBytes = UnsafeRawBufferPointer(rebasing: raw[0..<TransportHeader.encodedLength])
            let body = UnsafeMutableRawBufferPointer(rebasing: raw[TransportHeader.encodedLength...])
            ChaChaPoly.sealInPlace(
                combined: body, plaintextLength: payloadLength, nonce: .init(counter: packetNumber),
                authenticating: headerBytes, key: key)
        }
        return datagram
    }

    /// Decodes and decrypts a transport datagram, returning its packet number and frames (data copied out).
    static func open(_ datagram: [UInt8], key: SymmetricKey) throws -> (UInt64, [OwnedFrame]) {
        var copy = datagram
        return try copy.withUnsafeMutableBytes { raw in
            let packet = try TransportPacket(decoding: UnsafeRawBufferPointer(raw))
            let body = UnsafeMutableRawBufferPointer(rebasing: raw[TransportHeader.encodedLength...])
            let length = try ChaChaPoly.openInPlace(
                combined: body, nonce: .init(counter: packet.header.packetNumber.rawValue),
                authenticating: packet.associatedData, key: key)
            let frames = try FrameDecoder.decodeAll(UnsafeRawBufferPointer(rebasing: body[0..<length]))
            return (packet.header.packetNumber.rawValue, frames.map(\.owned))
        }
    }

    static func outcome(_ body: () throws -> Any) -> String {
        do {
            _ = try body()
            return "ACCEPTED (this is a bug)"
        } catch {
            return "rejected (\(error))"
        }
    }

    /// A TAI64N timestamp: big-endian seconds since 1970 plus 2^62, then big-endian nanoseconds.
    static func tai64n() -> [UInt8] {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let seconds = UInt64(now.tv_sec) + (1 << 62)
        let nanoseconds = UInt32(now.tv_nsec)
        return (0..<8).map { UInt8(truncatingIfNeeded: seconds >> (56 - 8 * UInt64($0))) }
            + (0..<4).map { UInt8(truncatingIfNeeded: nanoseconds >> (24 - 8 * UInt32($0))) }
    }

    func measure(bytesPerOperation: Int, bufferSize: Int, _ operation: (UInt64, inout [UInt8]) -> Void) -> String {
        var buffer = [UInt8](repeating: 0xA5, count: bufferSize)
        var iterations: UInt64 = 0
        let deadline = clock.now + .milliseconds(Int(measureSeconds * 1000))
        let start = clock.now
        while clock.now < deadline {
            for _ in 0..<64 {
                operation(iterations, &buffer)
                iterations += 1
            }
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let megabytes = Double(iterations) * Double(bytesPerOperation) / seconds / 1e6
        return "\(Int(megabytes.rounded())) MB/s (\(iterations) operations in \(Self.format(elapsed)))"
    }

    static func format(_ duration: Duration) -> String {
        let microseconds = Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
        if microseconds < 1000 { return "\(Int(microseconds.rounded())) µs" }
        return "\((microseconds / 100).rounded() / 10) ms"
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    static func pad(_ size: Int) -> String {
        String(repeating: " ", count: max(0, 5 - String(size).count)) + String(size)
    }
}
