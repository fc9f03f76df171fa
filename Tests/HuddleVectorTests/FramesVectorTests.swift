import HuddleWire
import Testing

/// `frames.json`: every frame type of PROTOCOL.md section 3. Each frame is decoded with `FrameDecoder` and its fields
/// compared with the vector's; the vector's fields are encoded with `Frame`/`OwnedFrame` and compared byte for byte.
/// A coalesced payload is decoded and encoded as a sequence (PADDING included), and each invalid payload must throw
/// the `WireError` case the vector names.
@Suite("Vectors: frames.json")
struct FramesVectorTests {
    static let file = "frames"
    static let single: CaseFilter = { $0.has("frame") }
    static let payloads: CaseFilter = { $0.has("frames") }
    static let errors: CaseFilter = { $0.has("error") }

    @Test("Every case of frames.json is checked (36 cases)")
    func coverage() throws {
        try expectCoverage(
            of: Self.file, count: 36,
            groups: [("frame", Self.single), ("payload", Self.payloads), ("error", Self.errors)])
    }

    @Test("One frame: decoded fields and encoded bytes", arguments: VectorFile.names(file, where: single))
    func frame(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let frame = try vector.value("frame")
        let encoded = try vector.bytes("encoded")

        let decoded = try decodePayload(encoded)
        #expect(decoded.map { $0.removing("acknowledged") } == [frame.removing("acknowledged")])
        if frame.has("acknowledged") {
            // The semantic ranges Swift holds, [smallest, largest] each.
            let ack = try #require(try decodeOwned(encoded).first)
            guard case .ack(let ackFrame) = ack else {
                Issue.record("\(name) did not decode as an ACK")
                return
            }
            let ranges: JSON = .array(ackFrame.ranges.map { [.int($0.lowerBound), .int($0.upperBound)] })
            #expect(ranges == (try frame.value("acknowledged")))
        }
        #expect(hexString(try encodePayload([frame])) == hexString(encoded))
    }

    @Test("A payload of several frames, padding last", arguments: VectorFile.names(file, where: payloads))
    func payload(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let frames = try vector.array("frames")
        let encoded = try vector.bytes("encoded")
        #expect(try decodePayload(encoded) == frames)
        #expect(hexString(try encodePayload(frames)) == hexString(encoded))
    }

    @Test("An invalid payload throws the named WireError", arguments: VectorFile.names(file, where: errors))
    func invalid(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let expected = try vector.string("error")
        #expect(throws: WireError.self) { try decodePayload(try vector.bytes("encoded")) }
        do {
            let frames = try decodePayload(try vector.bytes("encoded"))
            Issue.record("\(name) decoded as \(frames)")
        } catch let error as WireError {
            #expect(error.vectorName == expected, "\(name): Swift threw \(error)")
        }
    }
}

// MARK: - Frames in the vector schema

/// Decodes a payload with `FrameDecoder` into the vector files' form of its frames; a run of PADDING becomes
/// `{"type": "padding", "length": n}` where the decoder skipped it.
func decodePayload(_ payload: [UInt8]) throws(WireError) -> [JSON] {
    try withBytes(payload) { raw throws(WireError) in
        var decoder = FrameDecoder(raw)
        var frames: [JSON] = []
        var padding = 0
        while true {
            let frame = try decoder.next()
            if decoder.paddingLength > padding {
                frames.append(["type": "padding", "length": .int(decoder.paddingLength - padding)])
                padding = decoder.paddingLength
            }
            guard let frame else { break }
            frames.append(frameJSON(frame.owned))
        }
        return frames
    }
}

/// The frames of a payload as `OwnedFrame`s (padding skipped).
func decodeOwned(_ payload: [UInt8]) throws(WireError) -> [OwnedFrame] {
    try withBytes(payload) { raw throws(WireError) in try FrameDecoder.decodeAll(raw).map(\.owned) }
}

/// A decoded frame in the vector files' schema (field names of PROTOCOL.md section 3).
func frameJSON(_ frame: OwnedFrame) -> JSON {
    switch frame {
    case .ping:
        return ["type": "ping"]
    case .ack(let ack):
        var ranges: [JSON] = []
        var previousLower = ack.ranges.first.lowerBound
        for range in ack.ranges.additional {
            ranges.append(["gap": .int(previousLower - range.upperBound - 2), "length": .int(range.count - 1)])
            previousLower = range.lowerBound
        }
        return [
            "type": "ack", "largest": .int(ack.largestAcknowledged), "delay": .int(ack.ackDelay),
            "first_range_length": .int(ack.ranges.first.count - 1), "ranges": .array(ranges),
        ]
    case .message(let channel, let sequence, let offset, let totalLength, let data):
        return [
            "type": "message", "channel": .int(channel.rawValue), "sequence": .int(sequence.rawValue),
            "offset": .int(offset), "total_length": .int(totalLength), "data": .hex(data),
        ]
    case .datagram(let channel, let data):
        return ["type": "datagram", "channel": .int(channel.rawValue), "data": .hex(data)]
    case .close(let close):
        return ["type": "close", "code": .int(close.code.rawValue), "reason": .string(close.reason)]
    case .maxData(let limit):
        return ["type": "max_data", "limit": .int(limit)]
    case .dataBlocked(let limit):
        return ["type": "data_blocked", "limit": .int(limit)]
    case .pathChallenge(let data), .pathResponse(let data):
        let type: JSON = if case .pathChallenge = frame { "path_challenge" } else { "path_response" }
        return ["type": type, "data": .hex(littleEndianBytes(data)), "data_u64le": .int(data)]
    case .observedAddress(let address):
        return ["type": "observed_address", "address": addressJSON(address)]
    case .candidates(let addresses):
        return ["type": "candidates", "addresses": .array(addresses.map(addressJSON))]
    }
}

/// Encodes frames given in the vector schema with Swift's encoders (`OwnedFrame`, `Frame.encodePadding`).
func encodePayload(_ frames: [JSON]) throws -> [UInt8] {
    var out: [UInt8] = []
    for frame in frames {
        if try frame.string("type") == "padding" {
            let count = try frame.int("length")
            out += try written(count) { writer throws(WireError) in try Frame.encodePadding(count: count, into: &writer)
            }
        } else {
            out += try ownedFrame(frame).encoded()
        }
    }
    return out
}

/// The `OwnedFrame` a vector describes (every field but `acknowledged` and `data_u64le`, which restate others).
func ownedFrame(_ frame: JSON) throws -> OwnedFrame {
    switch try frame.string("type") {
    case "ping":
        return .ping
    case "ack":
        // Rebuild the ranges from the wire fields: largest, first range length, then (gap, length) pairs.
        var upper = try frame.uint64("largest")
        var lower = upper - (try frame.uint64("first_range_length"))
        var ranges = [lower...upper]
        for range in try frame.array("ranges") {
            upper = lower - (try range.uint64("gap")) - 2
            lower = upper - (try range.uint64("length"))
            ranges.append(lower...upper)
        }
        return .ack(AckFrame(ackDelay: try frame.uint64("delay"), ranges: try AckRanges(descending: ranges)))
    case "message":
        return .message(
            channel: try ChannelID(validating: try frame.uint64("channel")),
            sequence: MessageSequence(try frame.uint64("sequence")), offset: try frame.int("offset"),
            totalLength: try frame.int("total_length"), data: try frame.bytes("data"))
    case "datagram":
        return .datagram(channel: try ChannelID(validating: try frame.uint64("channel")), data: try frame.bytes("data"))
    case "close":
        return .close(
            CloseFrame(code: CloseCode(rawValue: try frame.uint64("code")), reason: try frame.string("reason")))
    case "max_data":
        return .maxData(try frame.uint64("limit"))
    case "data_blocked":
        return .dataBlocked(try frame.uint64("limit"))
    case "path_challenge":
        return .pathChallenge(littleEndianValue(try frame.bytes("data")))
    case "path_response":
        return .pathResponse(littleEndianValue(try frame.bytes("data")))
    case "observed_address":
        return .observedAddress(try wireAddress(try frame.value("address")))
    case "candidates":
        return .candidates(try frame.array("addresses").map(wireAddress))
    case let other:
        throw VectorError.wrongType(other, expected: "known frame type", in: frame)
    }
}

/// The 8 little-endian bytes of `value`.
func littleEndianBytes(_ value: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}

/// The little-endian value of up to 8 bytes.
func littleEndianValue(_ bytes: [UInt8]) -> UInt64 {
    bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
}
