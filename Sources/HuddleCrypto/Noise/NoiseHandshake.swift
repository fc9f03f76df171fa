/// A Noise handshake (HandshakeState) as a sans-IO state machine over X25519, ChaCha20-Poly1305 and SHA256 or
/// BLAKE2b.
///
/// Drive it by calling ``writeMessage(payload:)`` when ``isMyTurn`` and ``readMessage(_:)`` otherwise, until
/// ``isComplete``; then ``split()`` yields the transport cipher states and wipes the handshake secrets. Any failure
/// (a forged message, a low-order key) throws and leaves the handshake unusable: start a new one.
/// Randomness (the ephemeral key) comes only from the generator passed to the initialiser.
///
/// It is a class on purpose: a copy of a handshake that wrote two different messages would reuse its ephemeral key
/// and a (key, nonce) pair, so every reference shares one state. It is not `Sendable`: drive it from one task.
/// ``split()`` may be called once; it throws afterwards.
public final class NoiseHandshake {
    /// Which side of the handshake this is.
    public enum Role: Sendable { case initiator, responder }

    /// Everything a handshake needs besides randomness.
    public struct Configuration: Sendable {
        /// The pattern to run.
        public var pattern: NoisePattern
        /// The hash function (SHA256 for Huddle).
        public var hashFunction: NoiseHashFunction
        /// This side's role.
        public var role: Role
        /// Data both sides must agree on (mixed into the handshake hash).
        public var prologue: [UInt8]
        /// This side's static key, if the pattern sends or uses one.
        public var staticKey: X25519PrivateKey?
        /// The peer's static key, if known in advance (`IK` initiators).
        public var remoteStaticKey: X25519PublicKey?
        /// Pre-shared keys (32 bytes each), in the order the pattern's `psk` tokens consume them.
        public var presharedKeys: [SecureBytes]

        /// Creates a configuration.
        public init(
            pattern: NoisePattern, hashFunction: NoiseHashFunction = .sha256, role: Role, prologue: [UInt8] = [],
            staticKey: X25519PrivateKey? = nil, remoteStaticKey: X25519PublicKey? = nil,
            presharedKeys: [SecureBytes] = []
        ) {
            self.pattern = pattern
            self.hashFunction = hashFunction
            self.role = role
            self.prologue = prologue
            self.staticKey = staticKey
            self.remoteStaticKey = remoteStaticKey
            self.presharedKeys = presharedKeys
        }
    }

    /// The transport keys a finished handshake produces.
    public struct TransportKeys: Sendable {
        /// The cipher state for messages this side sends.
        public var sending: CipherState
        /// The cipher state for messages this side receives.
        public var receiving: CipherState
        /// The final handshake hash (a channel binding both sides share).
        public var handshakeHash: [UInt8]
        /// The peer's static key (learned or pre-known).
        public var remoteStaticKey: X25519PublicKey?
    }

    /// The Noise limit on any message: 65535 bytes.
    public static let maximumMessageLength = 65535

    private var configuration: Configuration
    private var symmetric: SymmetricState
    private var ephemeral: X25519PrivateKey?
    private var remoteEphemeral: X25519PublicKey?
    private(set) public var remoteStaticKey: X25519PublicKey?
    private var messageIndex = 0
    private var presharedKeyIndex = 0
    private var failed = false
    private var didSplit = false

    /// Starts a handshake. The ephemeral key is drawn from `generator` now, so the handshake itself never needs
    /// randomness again.
    public convenience init(configuration: Configuration, using generator: inout some RandomBytesGenerator) throws {
        try self.init(configuration: configuration, ephemeralKey: X25519PrivateKey(using: &generator))
    }

    /// Starts a handshake with a fixed ephemeral key. Only for known-answer tests: reusing an ephemeral key across
    /// handshakes destroys forward secrecy.
    public init(configuration: Configuration, ephemeralKey: X25519PrivateKey) throws {
        let pattern = configuration.pattern
        // Pre-shared keys may be supplied later (``supplyPresharedKeys(_:)``): an IKpsk2 responder learns who the
        // initiator is from message 1 before it knows which PSK applies.
        guard configuration.presharedKeys.isEmpty || configuration.presharedKeys.count == pattern.presharedKeyCount
        else {
            throw CryptoError.missingKey("\(pattern.presharedKeyCount) pre-shared key(s)")
        }
        for key in configuration.presharedKeys where key.count != 32 {
            throw CryptoError.invalidLength(what: "Noise pre-shared key", expected: 32, actual: key.count)
        }
        let sendsStatic = pattern.messages.enumerated().contains { index, tokens in
            tokens.contains(.s) && (index % 2 == 0) == (configuration.role == .initiator)
        }
        let preMessageStatic =
            configuration.role == .initiator
            ? pattern.initiatorPreMessage.contains(.s) : pattern.responderPreMessage.contains(.s)
        if (sendsStatic || preMessageStatic) && configuration.staticKey == nil {
            throw CryptoError.missingKey("a local static key")
        }
        let knowsRemoteStatic =
            configuration.role == .initiator
            ? pattern.responderPreMessage.contains(.s) : pattern.initiatorPreMessage.contains(.s)
        if knowsRemoteStatic && configuration.remoteStaticKey == nil {
            throw CryptoError.missingKey("the remote static key")
        }

        self.configuration = configuration
        self.ephemeral = ephemeralKey
        self.remoteStaticKey = configuration.remoteStaticKey
        symmetric = SymmetricState(
            protocolName: pattern.protocolName(hash: configuration.hashFunction),
            hashFunction: configuration.hashFunction)
        symmetric.mixHash(configuration.prologue)
        let initiatorStatic = configuration.role == .initiator ? configuration.staticKey?.publicKey : remoteStaticKey
        let responderStatic = configuration.role == .responder ? configuration.staticKey?.publicKey : remoteStaticKey
        if pattern.initiatorPreMessage.contains(.s), let key = initiatorStatic { symmetric.mixHash(key.bytes) }
        if pattern.responderPreMessage.contains(.s), let key = responderStatic { symmetric.mixHash(key.bytes) }
    }

    /// Supplies the pre-shared keys after creation, before the first `psk` token is processed. Throws if keys were
    /// already given, the count or length is wrong, or a `psk` token was already needed.
    public func supplyPresharedKeys(_ keys: [SecureBytes]) throws {
        guard configuration.presharedKeys.isEmpty, presharedKeyIndex == 0 else {
            throw CryptoError.handshakeOutOfOrder("pre-shared keys were already supplied")
        }
        guard keys.count == configuration.pattern.presharedKeyCount else {
            throw CryptoError.missingKey("\(configuration.pattern.presharedKeyCount) pre-shared key(s)")
        }
        for key in keys where key.count != 32 {
            throw CryptoError.invalidLength(what: "Noise pre-shared key", expected: 32, actual: key.count)
        }
        configuration.presharedKeys = keys
    }

    /// Whether every handshake message has been written or read.
    public var isComplete: Bool { messageIndex >= configuration.pattern.messages.count }

    /// Whether the next message is ours to write.
    public var isMyTurn: Bool {
        !isComplete && (messageIndex % 2 == 0) == (configuration.role == .initiator)
    }

    /// The current handshake hash.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// The exact size of the next message for a payload of `payloadLength` bytes.
    public func messageLength(payloadLength: Int) -> Int {
        guard !isComplete else { return 0 }
        var hasKey = symmetric.cipher.hasKey
        var length = 0
        for token in configuration.pattern.messages[messageIndex] {
            switch token {
            case .e:
                length += 32
                if configuration.pattern.usesPresharedKeys { hasKey = true }
            case .s: length += 32 + (hasKey ? 16 : 0)
            case .ee, .es, .se, .ss, .psk: hasKey = true
            }
        }
        return length + payloadLength + (hasKey ? 16 : 0)
    }

    /// WriteMessage: produces the next handshake message carrying `payload` (encrypted once a key is mixed in).
    public func writeMessage(payload: [UInt8] = []) throws -> [UInt8] {
        guard !failed else { throw CryptoError.handshakeOutOfOrder("the handshake already failed") }
        guard messageLength(payloadLength: payload.count) <= Self.maximumMessageLength else {
            throw CryptoError.outputLengthOutOfRange(
                what: "Noise message", requested: messageLength(payloadLength: payload.count),
                allowed: 0...Self.maximumMessageLength)
        }
        guard isMyTurn else { throw CryptoError.handshakeOutOfOrder("it is not this side's turn to write") }
        do {
            var message: [UInt8] = []
            for token in configuration.pattern.messages[messageIndex] {
                switch token {
                case .e:
                    guard let ephemeral else { throw CryptoError.missingKey("an ephemeral key") }
                    message += ephemeral.publicKey.bytes
                    symmetric.mixHash(ephemeral.publicKey.bytes)
                    if configuration.pattern.usesPresharedKeys {
                        symmetric.mixKey(SecureBytes(ephemeral.publicKey.bytes))
                    }
                case .s:
                    guard let staticKey = configuration.staticKey else {
                        throw CryptoError.missingKey("a local static key")
                    }
                    message += try symmetric.encryptAndHash(staticKey.publicKey.bytes)
                default:
                    try mixSecret(token)
                }
            }
            message += try symmetric.encryptAndHash(payload)
            messageIndex += 1
            return message
        } catch {
            failed = true
            throw error
        }
    }

    /// ReadMessage: consumes the peer's next handshake message and returns its decrypted payload.
    public func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        guard !failed else { throw CryptoError.handshakeOutOfOrder("the handshake already failed") }
        guard message.count <= Self.maximumMessageLength else {
            failed = true
            throw CryptoError.outputLengthOutOfRange(
                what: "Noise message", requested: message.count, allowed: 0...Self.maximumMessageLength)
        }
        guard !isComplete, !isMyTurn else {
            throw CryptoError.handshakeOutOfOrder("no message is expected from the peer")
        }
        do {
            var offset = 0
            for token in configuration.pattern.messages[messageIndex] {
                switch token {
                case .e:
                    guard message.count - offset >= 32 else { throw CryptoError.handshakeMessageTruncated }
                    let key = try X25519PublicKey(bytes: message[offset..<(offset + 32)])
                    offset += 32
                    remoteEphemeral = key
                    symmetric.mixHash(key.bytes)
                    if configuration.pattern.usesPresharedKeys { symmetric.mixKey(SecureBytes(key.bytes)) }
                case .s:
                    let length = 32 + (symmetric.cipher.hasKey ? 16 : 0)
                    guard message.count - offset >= length else { throw CryptoError.handshakeMessageTruncated }
                    let plaintext = try symmetric.decryptAndHash(Array(message[offset..<(offset + length)]))
                    offset += length
                    remoteStaticKey = try X25519PublicKey(bytes: plaintext)
                default:
                    try mixSecret(token)
                }
            }
            let remainder = Array(message[offset...])
            if symmetric.cipher.hasKey && remainder.count < 16 { throw CryptoError.handshakeMessageTruncated }
            let payload = try symmetric.decryptAndHash(remainder)
            messageIndex += 1
            return payload
        } catch {
            failed = true
            throw error
        }
    }

    /// Split(): once complete, returns the transport cipher states and wipes the chaining key and ephemeral key.
    public func split() throws -> TransportKeys {
        guard isComplete, !failed else { throw CryptoError.handshakeOutOfOrder("split before the handshake completed") }
        guard !didSplit else { throw CryptoError.handshakeOutOfOrder("split was already called") }
        didSplit = true
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        ephemeral = nil
        remoteEphemeral = nil
        let initiator = configuration.role == .initiator
        return TransportKeys(
            sending: initiator ? initiatorToResponder : responderToInitiator,
            receiving: initiator ? responderToInitiator : initiatorToResponder,
            handshakeHash: symmetric.handshakeHash, remoteStaticKey: remoteStaticKey)
    }

    /// Whether the handshake's secrets (chaining key, last handshake cipher key and ephemeral key) have been
    /// released by ``split()``. The handshake hash is kept: it is the public channel binding.
    public var secretsAreWiped: Bool {
        symmetric.chainingKey.isAllZero && !symmetric.cipher.hasKey && ephemeral == nil
    }

    private func mixSecret(_ token: NoisePattern.Token) throws {
        let initiator = configuration.role == .initiator
        switch token {
        case .ee:
            symmetric.mixKey(try dh(ephemeral, remoteEphemeral))
        case .es:
            symmetric.mixKey(
                try initiator ? dh(ephemeral, remoteStaticKey) : dh(configuration.staticKey, remoteEphemeral))
        case .se:
            symmetric.mixKey(
                try initiator ? dh(configuration.staticKey, remoteEphemeral) : dh(ephemeral, remoteStaticKey))
        case .ss:
            symmetric.mixKey(try dh(configuration.staticKey, remoteStaticKey))
        case .psk:
            guard presharedKeyIndex < configuration.presharedKeys.count else {
                throw CryptoError.missingKey("a pre-shared key")
            }
            let key = configuration.presharedKeys[presharedKeyIndex]
            presharedKeyIndex += 1
            symmetric.mixKeyAndHash(key)
        case .e, .s:
            preconditionFailure("e and s are handled by the caller")
        }
    }

    private func dh(_ local: X25519PrivateKey?, _ remote: X25519PublicKey?) throws -> SecureBytes {
        guard let local else { throw CryptoError.missingKey("a local key for Diffie-Hellman") }
        guard let remote else { throw CryptoError.missingKey("a remote key for Diffie-Hellman") }
        return try local.sharedSecret(with: remote)
    }
}
