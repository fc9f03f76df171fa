import HuddleWire
import Testing

/// Decodes arbitrary bytes every way the engine would and checks the decoders' promises, like the
/// `WireFuzzer` target does: decoding either throws a ``WireError`` or yields values that re-encode to
/// something that decodes to the same values. Returns a summary for assertions.
enum WireExercise {
    struct Outcome: Equatable {
        var packetType: PacketType?
        var classifyError: WireError?
        var frames: [OwnedFrame] = []
        var frameError: WireError?
    }

    static func run(_ input: [UInt8]) -> Outcome {
        input.withUnsafeBytes { run($0) }
    }

    static func run(_ datagram: UnsafeRawBufferPointer) -> Outcome {
        var outcome = Outcome()
        do {
            let type = try PacketClassifier.classify(datagram)
            outcome.packetType = type
            switch type {
            case .handshakeInitiation:
                let message = try HandshakeInitiation(decoding: datagram)
                #expect(try message.encoded().elementsEqual(datagram))
            case .handshakeResponse:
                let message = try HandshakeResponse(decoding: datagram)
                #expect(try message.encoded().elementsEqual(datagram))
            case .cookieReply:
                let message = try CookieReply(decoding: datagram)
                #expect(try message.encoded().elementsEqual(datagram))
            case .transportData:
                let packet = try TransportPacket(decoding: datagram)
                #expect(try packet.header.encoded().elementsEqual(packet.associatedData))
                // Null cipher: everything after the header is plaintext (a zero tag decodes as padding).
                (outcome.frames, outcome.frameError) = frames(
                    UnsafeRawBufferPointer(rebasing: datagram[TransportHeader.encodedLength...]))
            case .relayRegister:
                #expect(try RelayRegister(decoding: datagram).encoded().elementsEqual(datagram))
            case .relayChallenge:
                #expect(try RelayChallenge(decoding: datagram).encoded().elementsEqual(datagram))
            case .relayRegistered:
                #expect(try RelayRegistered(decoding: datagram).encoded().elementsEqual(datagram))
            case .relaySend, .relayDeliver:
                #expect(RelayEnvelope.key(of: datagram).count == 32)
            case .handshakeRefusal:
                #expect(try HandshakeRefusal(decoding: datagram).encoded().elementsEqual(datagram))
            }
        } catch {
            // Every decoder throws WireError alone (typed throws), so nothing else can land here.
            outcome.classifyError = error
            // Fuzz the frame decoder directly too.
            (outcome.frames, outcome.frameError) = frames(datagram)
        }
        return outcome
    }

    static func frames(_ payload: [UInt8]) -> ([OwnedFrame], WireError?) {
        payload.withUnsafeBytes { frames($0) }
    }

    static func frames(_ payload: UnsafeRawBufferPointer) -> ([OwnedFrame], WireError?) {
        var decoder = FrameDecoder(payload)
        var frames: [OwnedFrame] = []
        do {
            while let frame = try decoder.next() {
                let encoded = try frame.encoded()
                #expect(encoded.count == frame.encodedLength)
                #expect(try decodeFrames(encoded) == [frame.owned])
                frames.append(frame.owned)
            }
            return (frames, nil)
        } catch {
            #expect(decoder.failed)
            return (frames, error)
        }
    }
}
