import HuddleWire

/// Builds the seed corpus (written by `WireFuzzer --write-corpus DIR`): valid encodings of every packet layout and
/// of every frame type (inside transport packets with a zero "null cipher" tag), plus raw frame payloads.
enum CorpusWriter {
    static func pattern(_ seed: UInt8, _ count: Int) -> [UInt8] {
        (0..<count).map { seed &+ UInt8(truncatingIfNeeded: $0 &* 37) }
    }

    static func makeSeeds() throws -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for variant in 0..<2 {
            let seed = UInt8(variant * 100)
            let initiation = try HandshakeInitiation(
                senderIndex: ReceiverIndex(UInt32(variant) &* 0x0102_0304), ephemeral: pattern(seed, 32),
                encryptedStatic: pattern(seed &+ 1, 48), encryptedPayload: pattern(seed &+ 2, 32),
                mac1: pattern(seed &+ 3, 16), mac2: variant == 0 ? [UInt8](repeating: 0, count: 16) : pattern(9, 16)
            )
            seeds.append(("initiation-\(variant)", try initiation.encoded()))
            let response = try HandshakeResponse(
                senderIndex: ReceiverIndex(7), receiverIndex: ReceiverIndex(UInt32(variant) &* 0x0102_0304),
                ephemeral: pattern(seed &+ 4, 32), encryptedNothing: pattern(seed &+ 5, 16), mac1: pattern(seed, 16)
            )
            seeds.append(("response-\(variant)", try response.encoded()))
            let cookie = try CookieReply(
                receiverIndex: ReceiverIndex(UInt32(variant)), nonce: pattern(seed &+ 6, 24),
                encryptedCookie: pattern(seed &+ 7, 32))
            seeds.append(("cookie-\(variant)", try cookie.encoded()))
        }

        let message = pattern(0x41, 600)
        let datagram = pattern(0x61, 1100)
        var frames: [(String, [OwnedFrame])] = []
        func add(_ name: String, _ list: [OwnedFrame]) {
            frames.append((name, list))
        }
        let thirtyTwo: [ClosedRange<UInt64>] = (0..<32).map { (index: Int) -> ClosedRange<UInt64> in
            let upper = UInt64(5001 - 3 * index)
            return (upper - 1)...upper
        }
        let highest: UInt64 = (1 << 62) - 1
        add("ping", [.ping])
        add("ack-single", [.ack(AckFrame(ackDelay: 0, ranges: try AckRanges(0...0)))])
        add("ack-two", [.ack(AckFrame(ackDelay: 25, ranges: try AckRanges(descending: [98...100, 89...93])))])
        add("ack-32", [.ack(AckFrame(ackDelay: 1 << 20, ranges: try AckRanges(descending: thirtyTwo)))])
        add(
            "ack-large-numbers",
            [.ack(AckFrame(ackDelay: 1 << 40, ranges: try AckRanges((highest - 99)...highest)))])
        add(
            "message-whole",
            [
                .message(
                    channel: ChannelID(1), sequence: MessageSequence(0), offset: 0, totalLength: 5,
                    data: [104, 105])
            ]
        )
        add(
            "message-empty",
            [.message(channel: ChannelID(0), sequence: MessageSequence(9), offset: 0, totalLength: 0, data: [])])
        add(
            "message-fragment",
            [
                .message(
                    channel: ChannelID(255), sequence: MessageSequence(1 << 40), offset: 261_544,
                    totalLength: 262_144, data: message)
            ])
        add("datagram-small", [.datagram(channel: ChannelID(3), data: [1, 2, 3])])
        add("datagram-large", [.datagram(channel: ChannelID(200), data: datagram)])
        add("close-reason", [.close(CloseFrame(code: .protocolViolation, reason: "bad frame ✗"))])
        add("close-unknown-code", [.close(CloseFrame(code: CloseCode(rawValue: 1 << 50), reason: ""))])
        add("max-data", [.maxData(1 << 30)])
        add("data-blocked", [.dataBlocked(16_383)])
        let mixedAck = OwnedFrame.ack(AckFrame(ackDelay: 3, ranges: try AckRanges(descending: [10...12, 1...7])))
        let mixedMessage = OwnedFrame.message(
            channel: ChannelID(2), sequence: MessageSequence(3), offset: 4, totalLength: 9, data: [5, 6, 7, 8, 9])
        add(
            "mixed",
            [mixedAck, .ping, mixedMessage, .datagram(channel: ChannelID(2), data: []), .maxData(1_000_000)]
        )
        add("keepalive", [])

        for (index, (name, list)) in frames.enumerated() {
            var packet = try TransportHeader(
                flags: TransportFlags(rawValue: index == 3 ? 0x80 : 0), receiverIndex: ReceiverIndex(0xA1B2_C3D4),
                packetNumber: PacketNumber(UInt64(index) << (index % 8 * 8))
            ).encoded()
            var payload: [UInt8] = []
            for frame in list {
                try frame.encode(into: &payload)
            }
            if name == "ping" {
                payload += [0, 0, 0, 0]  // Padding after a frame.
            }
            packet += payload
            packet += [UInt8](repeating: 0, count: TransportHeader.tagLength)
            seeds.append(("transport-" + name, packet))
            if !payload.isEmpty, payload.count <= 64 {
                seeds.append(("frames-" + name, payload))
            }
        }
        return seeds
    }
}
