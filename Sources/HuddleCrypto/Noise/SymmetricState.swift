/// Noise's SymmetricState: the chaining key, the handshake hash and the current cipher state.
struct SymmetricState: Sendable {
    let hashFunction: NoiseHashFunction
    private(set) var chainingKey: SecureBytes
    private(set) var handshakeHash: [UInt8]
    private(set) var cipher = CipherState()

    /// InitializeSymmetric(protocol_name).
    init(protocolName: String, hashFunction: NoiseHashFunction) {
        self.hashFunction = hashFunction
        let name = Array(protocolName.utf8)
        if name.count <= hashFunction.hashLength {
            handshakeHash = name + [UInt8](repeating: 0, count: hashFunction.hashLength - name.count)
        } else {
            handshakeHash = hashFunction.hash(name)
        }
        chainingKey = SecureBytes(handshakeHash)
    }

    mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = hashFunction.hash(handshakeHash + data)
    }

    mutating func mixKey(_ inputKeyMaterial: SecureBytes) {
        let outputs = hashFunction.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = outputs[0]
        cipher = CipherState(key: Self.truncatedKey(outputs[1]))
    }

    mutating func mixKeyAndHash(_ inputKeyMaterial: SecureBytes) {
        let outputs = hashFunction.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 3)
        chainingKey = outputs[0]
        outputs[1].withUnsafeBytes { mixHash(Array($0)) }
        cipher = CipherState(key: Self.truncatedKey(outputs[2]))
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext = try cipher.encrypt(plaintext, associatedData: handshakeHash)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws -> [UInt8] {
        let plaintext = try cipher.decrypt(ciphertext, associatedData: handshakeHash)
        mixHash(ciphertext)
        return plaintext
    }

    /// Split(): the two transport cipher states (initiator-to-responder first). Wipes the chaining key.
    mutating func split() -> (CipherState, CipherState) {
        let outputs = hashFunction.hkdf(chainingKey: chainingKey, inputKeyMaterial: SecureBytes([UInt8]()), outputs: 2)
        chainingKey = SecureBytes(count: chainingKey.count) { _ in }
        cipher = CipherState()
        return (CipherState(key: Self.truncatedKey(outputs[0])), CipherState(key: Self.truncatedKey(outputs[1])))
    }

    /// Truncates a HASHLEN-byte HKDF output to a 32-byte cipher key (a no-op for SHA256).
    private static func truncatedKey(_ output: SecureBytes) -> SymmetricKey {
        output.withUnsafeBytes { try! SymmetricKey(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<32])) }
    }
}
