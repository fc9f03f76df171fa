import HuddleWire
import PropertyBased
import Testing

/// Encodes frames one after the other.
func encodeFrames(_ frames: [OwnedFrame]) throws -> [UInt8] {
    var bytes: [UInt8] = []
    for frame in frames {
        try frame.encode(into: &bytes)
    }
    return bytes
}

/// Decodes every frame of `bytes` into owned frames.
func decodeFrames(_ bytes: [UInt8]) throws(WireError) -> [OwnedFrame] {
    let result: Result<[OwnedFrame], WireError> = bytes.withUnsafeBytes { raw in
        Result { () throws(WireError) in try FrameDecoder.decodeAll(raw).map(OwnedFrame.init) }
    }
    return try result.get()
}

/// The error decoding `bytes` as frames throws, or `nil` if it decodes.
func frameDecodingError(_ bytes: [UInt8]) -> WireError? {
    do {
        _ = try decodeFrames(bytes)
        return nil
    } catch {
        return error
    }
}

/// Runs `body` and returns the ``WireError`` it throws, or `nil`.
func wireError<T>(_ body: () throws(WireError) -> T) -> WireError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// Random values for property tests.
enum WireGen {
    /// The value ranges of the four variable-length integer length classes.
    static let varIntClasses: [ClosedRange<UInt64>] = [
        0...63, 64...16_383, 16_384...1_073_741_823, 1_073_741_824...WireLimits.maxVarInt,
    ]

    static func varInt(using rng: inout any SeededRandomNumberGenerator) -> UInt64 {
        let range = varIntClasses[Int.random(in: 0..<4, using: &rng)]
        // Half of the time, pick a class boundary: those are where encoders go wrong.
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return range.lowerBound
        case 1: return range.upperBound
        default: return UInt64.random(in: range, using: &rng)
        }
    }

    static func bytes(_ count: Int, using rng: inout any SeededRandomNumberGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    static func smallLength(upTo limit: Int, using rng: inout any SeededRandomNumberGenerator) -> Int {
        guard limit > 0 else { return 0 }
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return 0
        case 1: return limit
        case 2: return Int.random(in: 0...min(limit, 16), using: &rng)
        default: return Int.random(in: 0...limit, using: &rng)
        }
    }

    static func ackRanges(using rng: inout any SeededRandomNumberGenerator) -> AckRanges {
        let scale: UInt64 = [10, 1000, 1 << 40, WireLimits.maxVarInt][Int.random(in: 0..<4, using: &rng)]
        let largest = UInt64.random(in: 0...scale, using: &rng)
        var ranges: [ClosedRange<UInt64>] = []
        var upper = largest
        let wanted = Int.random(in: 1...WireLimits.maxAckRanges, using: &rng)
        while ranges.count < wanted {
            let length = UInt64.random(in: 0...min(upper, scale / 16 + 3), using: &rng)
            ranges.append((upper - length)...upper)
            let lower = upper - length
            guard lower >= 2 else { break }
            let gap = UInt64.random(in: 0...min(lower - 2, scale / 16 + 3), using: &rng)
            upper = lower - gap - 2
        }
        return try! AckRanges(descending: ranges)
    }

    static func closeReason(using rng: inout any SeededRandomNumberGenerator) -> String {
        var reason = ""
        let target = smallLength(upTo: WireLimits.maxCloseReasonLength, using: &rng)
        while true {
            let scalar: Unicode.Scalar
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: scalar = Unicode.Scalar(UInt8.random(in: 0...0x7F, using: &rng))
            case 1: scalar = Unicode.Scalar(UInt32.random(in: 0x80...0x7FF, using: &rng))!
            case 2: scalar = Unicode.Scalar(UInt32.random(in: 0xE000...0xFFFD, using: &rng))!
            default: scalar = Unicode.Scalar(UInt32.random(in: 0x10000...0x10FFFF, using: &rng))!
            }
            if reason.utf8.count + String(scalar).utf8.count > target { return reason }
            reason.unicodeScalars.append(scalar)
        }
    }

    static func frame(kind: Int, using rng: inout any SeededRandomNumberGenerator) -> OwnedFrame {
        switch kind {
        case 0:
            return .ping
        case 1:
            return .ack(AckFrame(ackDelay: varInt(using: &rng), ranges: ackRanges(using: &rng)))
        case 2:
            let total = smallLength(upTo: WireLimits.maxMessageSize, using: &rng)
            let offset = smallLength(upTo: total, using: &rng)
            let length = smallLength(upTo: min(total - offset, 1100), using: &rng)
            return .message(
                channel: ChannelID(UInt8.random(in: 0...255, using: &rng)),
                sequence: MessageSequence(varInt(using: &rng)), offset: offset, totalLength: total,
                data: bytes(length, using: &rng))
        case 3:
            let length = smallLength(upTo: WireLimits.maxDatagramSize, using: &rng)
            return .datagram(
                channel: ChannelID(UInt8.random(in: 0...255, using: &rng)), data: bytes(length, using: &rng))
        case 4:
            let code =
                Bool.random(using: &rng)
                ? CloseCode(rawValue: UInt64.random(in: 0...8, using: &rng)) : CloseCode(rawValue: varInt(using: &rng))
            return .close(CloseFrame(code: code, reason: closeReason(using: &rng)))
        case 5:
            return .maxData(varInt(using: &rng))
        default:
            return .dataBlocked(varInt(using: &rng))
        }
    }

    /// One random frame of any type.
    static let anyFrame = Generator<OwnedFrame, Shrink.None<OwnedFrame>>(run: { rng in
        frame(kind: Int.random(in: 0...6, using: &rng), using: &rng)
    })

    /// 1 to 8 random frames.
    static let frameList = Generator<[OwnedFrame], Shrink.None<[OwnedFrame]>>(run: { rng in
        (0..<Int.random(in: 1...8, using: &rng)).map { _ in frame(kind: Int.random(in: 0...6, using: &rng), using: &rng)
        }
    })

    /// A variable-length integer value from a random length class.
    static let varIntValue = Generator<UInt64, Shrink.None<UInt64>>(run: { rng in varInt(using: &rng) })

    static let initiation = Generator<HandshakeInitiation, Shrink.None<HandshakeInitiation>>(run: { rng in
        try! HandshakeInitiation(
            senderIndex: ReceiverIndex(UInt32.random(in: 0...UInt32.max, using: &rng)),
            ephemeral: bytes(32, using: &rng), encryptedStatic: bytes(48, using: &rng),
            encryptedPayload: bytes(32, using: &rng), mac1: bytes(16, using: &rng), mac2: bytes(16, using: &rng))
    })

    static let response = Generator<HandshakeResponse, Shrink.None<HandshakeResponse>>(run: { rng in
        try! HandshakeResponse(
            senderIndex: ReceiverIndex(UInt32.random(in: 0...UInt32.max, using: &rng)),
            receiverIndex: ReceiverIndex(UInt32.random(in: 0...UInt32.max, using: &rng)),
            ephemeral: bytes(32, using: &rng), encryptedNothing: bytes(16, using: &rng), mac1: bytes(16, using: &rng),
            mac2: bytes(16, using: &rng))
    })

    static let cookieReply = Generator<CookieReply, Shrink.None<CookieReply>>(run: { rng in
        try! CookieReply(
            receiverIndex: ReceiverIndex(UInt32.random(in: 0...UInt32.max, using: &rng)),
            nonce: bytes(24, using: &rng), encryptedCookie: bytes(32, using: &rng))
    })

    static let transportHeader = Generator<TransportHeader, Shrink.None<TransportHeader>>(run: { rng in
        TransportHeader(
            flags: TransportFlags(rawValue: UInt8.random(in: 0...255, using: &rng)),
            receiverIndex: ReceiverIndex(UInt32.random(in: 0...UInt32.max, using: &rng)),
            packetNumber: PacketNumber(UInt64.random(in: 0...UInt64.max, using: &rng)))
    })

    /// Random bytes of 0 to 1500 bytes; the first byte is biased towards the packet and frame types.
    static let hostileBytes = Generator<[UInt8], Shrink.None<[UInt8]>>(run: { rng in
        var result = bytes(smallLength(upTo: 1500, using: &rng), using: &rng)
        if !result.isEmpty, Bool.random(using: &rng) {
            result[0] = UInt8.random(in: 0...8, using: &rng)
        }
        return result
    })
}
