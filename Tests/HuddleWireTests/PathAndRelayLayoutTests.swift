import HuddleWire
import Testing

/// Layouts of the path frames (PATH_CHALLENGE, PATH_RESPONSE, OBSERVED_ADDRESS, CANDIDATES) and relay packets
/// (docs/PROTOCOL.md 3.8, 3.9 and 10): exact bytes, round trips and the limits.
@Suite("Path frames and relay packets")
struct PathAndRelayLayoutTests {
    static let v4 = try! WireAddress(family: 4, bytes: [198, 51, 100, 7], port: 40_000)
    static let v6 = try! WireAddress(
        family: 6, bytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1], port: 443)

    static func roundTrip(_ frame: OwnedFrame) throws -> [UInt8] {
        let bytes = try frame.encoded()
        let decoded = try bytes.withUnsafeBytes { try FrameDecoder.decodeAll($0).map(\.owned) }
        #expect(decoded == [frame])
        #expect(bytes.count == frame.encodedLength)
        return bytes
    }

    @Test("PATH_CHALLENGE and PATH_RESPONSE carry 8 bytes after their type")
    func challengeAndResponse() throws {
        #expect(try Self.roundTrip(.pathChallenge(0x0807_0605_0403_0201)) == [0x08, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try Self.roundTrip(.pathResponse(0x0807_0605_0403_0201)) == [0x09, 1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test("OBSERVED_ADDRESS is family, address and a big-endian port")
    func observedAddress() throws {
        #expect(try Self.roundTrip(.observedAddress(Self.v4)) == [0x0A, 4, 198, 51, 100, 7, 0x9C, 0x40])
        #expect(try Self.roundTrip(.observedAddress(Self.v6)).count == 1 + 19)
    }

    @Test("CANDIDATES holds at most eight addresses")
    func candidates() throws {
        let bytes = try Self.roundTrip(.candidates([Self.v4, Self.v6]))
        #expect(Array(bytes.prefix(3)) == [0x0B, 2, 4])
        _ = try Self.roundTrip(.candidates(Array(repeating: Self.v4, count: WireLimits.maxCandidates)))
        #expect(throws: WireError.self) {
            try OwnedFrame.candidates(Array(repeating: Self.v4, count: WireLimits.maxCandidates + 1)).encoded()
        }
        var tooMany: [UInt8] = [0x0B, 9]
        for _ in 0..<9 { tooMany += [4, 1, 2, 3, 4, 0, 1] }
        #expect(throws: WireError.self) { try tooMany.withUnsafeBytes { try FrameDecoder.decodeAll($0) } }
    }

    @Test("An address family other than 4 or 6 is rejected")
    func badFamily() {
        let bytes: [UInt8] = [0x0A, 5, 1, 2, 3, 4, 0, 1]
        #expect(throws: WireError.self) { try bytes.withUnsafeBytes { try FrameDecoder.decodeAll($0) } }
    }

    @Test("Relay packets have their fixed sizes and round-trip")
    func relayPackets() throws {
        let register = try RelayRegister(
            clientKey: [UInt8](repeating: 1, count: 32), token: [UInt8](repeating: 2, count: 16),
            mac: [UInt8](repeating: 3, count: 16)
        ).encoded()
        #expect(register.count == 68 && register[0] == 5)
        #expect(try PacketClassifier.classify(register) == .relayRegister)
        #expect(try RelayRegister(decoding: register).encoded() == register)
        let challenge = try RelayChallenge(
            relayKey: [UInt8](repeating: 4, count: 32), token: [UInt8](repeating: 5, count: 16)
        ).encoded()
        #expect(challenge.count == 52 && challenge.count < register.count)
        #expect(try RelayChallenge(decoding: challenge).encoded() == challenge)
        let registered = try RelayRegistered(observed: Self.v4, mac: [UInt8](repeating: 6, count: 16)).encoded()
        #expect(registered.count == 39)
        #expect(Array(registered[4..<11]) == [4, 198, 51, 100, 7, 0x9C, 0x40])
        #expect(try RelayRegistered(decoding: registered).encoded() == registered)
        var padded = registered
        padded[12] = 1
        #expect(throws: WireError.self) { try RelayRegistered(decoding: padded) }
    }

    @Test("A relay envelope needs a header and at least a minimal inner packet")
    func envelope() throws {
        var datagram = [UInt8](repeating: 0, count: RelayEnvelope.minimumLength)
        datagram[0] = PacketType.relaySend.rawValue
        #expect(try PacketClassifier.classify(datagram) == .relaySend)
        #expect(throws: WireError.self) { try PacketClassifier.classify(Array(datagram.dropLast())) }
        datagram[2] = 1
        #expect(throws: WireError.self) { try PacketClassifier.classify(datagram) }
    }
}
