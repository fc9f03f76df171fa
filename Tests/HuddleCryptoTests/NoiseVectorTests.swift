import HuddleCrypto
import Testing

/// Every vector in the cacophony subset (`Vectors/noise-cacophony-subset.json`): handshake messages, handshake hash
/// and transport messages, byte for byte, for IK, IKpsk2, XX and XXpsk3 with SHA256 and BLAKE2b. TEST-MATRIX K1.
@Suite("Noise cacophony vectors")
struct NoiseVectorTests {
    static let protocolNames = [
        "Noise_IK_25519_ChaChaPoly_BLAKE2b", "Noise_IK_25519_ChaChaPoly_SHA256", "Noise_XX_25519_ChaChaPoly_SHA256",
        "Noise_XXpsk3_25519_ChaChaPoly_SHA256", "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2b",
        "Noise_IKpsk2_25519_ChaChaPoly_SHA256",
    ]

    @Test("The vector file holds exactly the six protocols this suite runs")
    func everyVectorIsCovered() throws {
        let names = entries("vectors", in: try loadVectors("noise-cacophony-subset")).map { $0.string("protocol_name") }
        #expect(names.sorted() == Self.protocolNames.sorted())
    }

    @Test("Handshake and transport messages match byte for byte", arguments: protocolNames)
    func vector(protocolName: String) throws {
        let vector = try #require(
            entries("vectors", in: try loadVectors("noise-cacophony-subset")).first {
                $0.string("protocol_name") == protocolName
            })
        let parts = protocolName.split(separator: "_")
        let pattern = try #require(NoisePattern.all.first { $0.name == parts[1] })
        let hash = try #require(NoiseHashFunction(rawValue: String(parts[4])))
        #expect(pattern.protocolName(hash: hash) == protocolName)

        func psks(_ key: String) -> [SecureBytes] {
            ((vector[key] as? [String]) ?? []).map { SecureBytes(hex($0)) }
        }
        let initiator = try NoiseHandshake(
            configuration: .init(
                pattern: pattern, hashFunction: hash, role: .initiator, prologue: vector.bytes("init_prologue"),
                staticKey: X25519PrivateKey(secretBytes: vector.bytes("init_static")),
                remoteStaticKey: vector["init_remote_static"].map { try! X25519PublicKey(bytes: hex($0 as! String)) },
                presharedKeys: psks("init_psks")),
            ephemeralKey: X25519PrivateKey(secretBytes: vector.bytes("init_ephemeral")))
        let responder = try NoiseHandshake(
            configuration: .init(
                pattern: pattern, hashFunction: hash, role: .responder, prologue: vector.bytes("resp_prologue"),
                staticKey: X25519PrivateKey(secretBytes: vector.bytes("resp_static")), presharedKeys: psks("resp_psks")),
            ephemeralKey: X25519PrivateKey(secretBytes: vector.bytes("resp_ephemeral")))

        let messages = vector["messages"] as! [[String: Any]]
        var initiatorKeys: NoiseHandshake.TransportKeys?
        var responderKeys: NoiseHandshake.TransportKeys?
        for (index, message) in messages.enumerated() {
            let payload = message.bytes("payload")
            let expected = message.bytes("ciphertext")
            let initiatorSends = index % 2 == 0
            if !initiator.isComplete {
                #expect(initiator.isMyTurn == initiatorSends)
                let length =
                    initiatorSends
                    ? initiator.messageLength(payloadLength: payload.count)
                    : responder.messageLength(payloadLength: payload.count)
                let written =
                    initiatorSends
                    ? try initiator.writeMessage(payload: payload) : try responder.writeMessage(payload: payload)
                #expect(written == expected, "handshake message \(index)")
                #expect(written.count == length)
                let read = initiatorSends ? try responder.readMessage(written) : try initiator.readMessage(written)
                #expect(read == payload)
                if initiator.isComplete {
                    #expect(responder.isComplete)
                    #expect(initiator.handshakeHash == vector.bytes("handshake_hash"))
                    #expect(responder.handshakeHash == vector.bytes("handshake_hash"))
                    initiatorKeys = try initiator.split()
                    responderKeys = try responder.split()
                    #expect(initiator.secretsAreWiped)  // TEST-MATRIX H15
                    #expect(responder.secretsAreWiped)
                    #expect(
                        try initiatorKeys?.remoteStaticKey?.bytes
                            == X25519PrivateKey(secretBytes: vector.bytes("resp_static")).publicKey.bytes)
                    #expect(
                        try responderKeys?.remoteStaticKey?.bytes
                            == X25519PrivateKey(secretBytes: vector.bytes("init_static")).publicKey.bytes)
                }
            } else {
                let sealed =
                    initiatorSends
                    ? try initiatorKeys!.sending.encrypt(payload, associatedData: [])
                    : try responderKeys!.sending.encrypt(payload, associatedData: [])
                #expect(sealed == expected, "transport message \(index)")
                let opened =
                    initiatorSends
                    ? try responderKeys!.receiving.decrypt(sealed, associatedData: [])
                    : try initiatorKeys!.receiving.decrypt(sealed, associatedData: [])
                #expect(opened == payload)
            }
        }
        #expect(initiatorKeys != nil, "the handshake completed")
    }
}
