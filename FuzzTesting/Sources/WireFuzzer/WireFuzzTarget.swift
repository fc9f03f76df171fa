import FuzzTargets
import HuddleWire

/// FZ1 + FZ3: the datagram classifier, the packet layouts and the frame decoder behind a null cipher.
///
/// Every input is classified. Handshake layouts are decoded and must re-encode byte for byte. Transport
/// packets have their header decoded and re-encoded, and the bytes after the header are decoded as
/// plaintext frames (the null cipher; a zero tag decodes as padding). Inputs the classifier rejects are
/// also fed to the frame decoder directly, so the fuzzer reaches it without building a header first.
///
/// Decoding may fail only with a `WireError`. Every decoded frame must re-encode to at most the bytes it
/// came from and decode back to itself. Any violation stops the process (`precondition`), which is what
/// the fuzzer reports as a crash.
enum WireFuzzTarget: FuzzTarget {
    static let name = "wire"

    /// Valid encodings of every packet and frame type (``CorpusWriter``).
    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        try CorpusWriter.makeSeeds().map { (name: $0.0, bytes: $0.1) }
    }

    /// Checks one input; crashes on any broken promise.
    static func run(_ data: UnsafeRawBufferPointer) {
        let type: PacketType
        do {
            type = try PacketClassifier.classify(data)
        } catch {
            checkFrames(data)
            return
        }
        do {
            switch type {
            case .handshakeInitiation:
                let message = try HandshakeInitiation(decoding: data)
                let encoded = try message.encoded()
                precondition(encoded.elementsEqual(data), "initiation does not round-trip")
            case .handshakeResponse:
                let message = try HandshakeResponse(decoding: data)
                let encoded = try message.encoded()
                precondition(encoded.elementsEqual(data), "response does not round-trip")
            case .cookieReply:
                let message = try CookieReply(decoding: data)
                let encoded = try message.encoded()
                precondition(encoded.elementsEqual(data), "cookie reply does not round-trip")
            case .transportData:
                let packet = try TransportPacket(decoding: data)
                precondition(packet.associatedData.count == TransportHeader.encodedLength)
                precondition(packet.tag.count == TransportHeader.tagLength)
                precondition(
                    packet.associatedData.count + packet.ciphertext.count + packet.tag.count == data.count)
                let header = try packet.header.encoded()
                precondition(header.elementsEqual(packet.associatedData), "header does not round-trip")
                checkFrames(UnsafeRawBufferPointer(rebasing: data[TransportHeader.encodedLength...]))
            case .relayRegister:
                let encoded = try RelayRegister(decoding: data).encoded()
                precondition(encoded.elementsEqual(data), "relay register does not round-trip")
            case .relayChallenge:
                let encoded = try RelayChallenge(decoding: data).encoded()
                precondition(encoded.elementsEqual(data), "relay challenge does not round-trip")
            case .relayRegistered:
                // The one fixed-size layout with content rules past its length (the address family and its zero
                // padding): a typed error is a correct answer, a value must round-trip.
                do {
                    let encoded = try RelayRegistered(decoding: data).encoded()
                    precondition(encoded.elementsEqual(data), "relay registered does not round-trip")
                } catch {
                    switch error {
                    case .valueOutOfRange(field: .addressFamily, _, _), .nonZeroReserved: break
                    default: preconditionFailure("relay registered: unexpected \(error)")
                    }
                }
            case .relaySend, .relayDeliver:
                precondition(RelayEnvelope.key(of: data).count == 32)
            case .handshakeRefusal:
                let encoded = try HandshakeRefusal(decoding: data).encoded()
                precondition(encoded.elementsEqual(data), "handshake refusal does not round-trip")
            }
        } catch {
            preconditionFailure("classified as \(type) but failed to decode: \(error)")
        }
    }

    /// Decodes `payload` as frames and checks every frame's encoding.
    static func checkFrames(_ payload: UnsafeRawBufferPointer) {
        var decoder = FrameDecoder(payload)
        var scratch = [UInt8](repeating: 0, count: 2 * WireLimits.maxDatagramSize)
        while true {
            let start = decoder.reader.offset
            let frame: Frame?
            do {
                frame = try decoder.next()
            } catch {
                precondition(decoder.failed, "decoder did not stop after \(error)")
                precondition((try? decoder.next()) == nil, "decoder yielded a frame after an error")
                return
            }
            guard let frame else {
                precondition(decoder.reader.isAtEnd, "decoder ended before the payload did")
                return
            }
            let consumed = decoder.reader.offset - start
            check(frame, consumed: consumed, scratch: &scratch)
        }
    }

    /// Re-encodes `frame` into `scratch` and decodes it again.
    static func check(_ frame: Frame, consumed: Int, scratch: inout [UInt8]) {
        let length = frame.encodedLength
        precondition(length <= consumed, "\(frame.frameType) re-encodes to \(length) bytes from \(consumed)")
        if case .ack(let ack) = frame {
            let ranges = Array(ack.ranges)
            precondition(ranges.count == ack.ranges.count && ranges.count <= WireLimits.maxAckRanges)
            precondition(ack.ranges.contains(ack.ranges.largest) && ack.ranges.contains(ack.ranges.smallest))
            for (higher, lower) in zip(ranges, ranges.dropFirst()) {
                precondition(lower.upperBound + 2 <= higher.lowerBound, "ACK ranges not strictly descending")
            }
        }
        scratch.withUnsafeMutableBytes { raw in
            var writer = ByteWriter(raw)
            do {
                try frame.encode(into: &writer)
            } catch {
                preconditionFailure("decoded \(frame.frameType) fails to encode: \(error)")
            }
            precondition(writer.bytesWritten == length, "encodedLength disagrees with the bytes written")
            let encoded = UnsafeRawBufferPointer(rebasing: raw[0..<length])
            do {
                let again = try FrameDecoder.decodeAll(encoded)
                precondition(again.count == 1 && again[0] == frame, "\(frame.frameType) does not round-trip")
            } catch {
                preconditionFailure("re-encoded \(frame.frameType) fails to decode: \(error)")
            }
        }
    }
}
