import HuddleCrypto
import HuddleWire

/// Builds and consumes Huddle's two handshake messages: `Noise_IKpsk2_25519_ChaChaPoly_SHA256` carried in
/// WireGuard's initiation (152 bytes) and response (92 bytes) layouts, authenticated by `mac1` / `mac2`.
///
/// These functions are pure: the caller checks `mac1` (and `mac2` under load) before calling ``readInitiation``,
/// decides which pre-shared key applies to the initiator it learns, enforces timestamp freshness and rate limits,
/// and owns the resulting keys.
public enum HandshakeMessages {
    /// The Noise pattern and hash Huddle uses.
    public static let pattern = NoisePattern.ikpsk2

    /// An initiator's handshake in flight: the Noise state waiting for the response, and what a cookie reply must
    /// be bound to.
    public struct Initiation {
        /// The Noise state, waiting for message 2.
        public let noise: NoiseHandshake
        /// The index the initiator chose; the response is addressed to it.
        public let senderIndex: ReceiverIndex
        /// The peer's static key (the initiator knows it in advance).
        public let remoteStatic: X25519PublicKey
        /// The encoded initiation, kept for retransmission with a new `mac2` after a cookie reply.
        public let datagram: [UInt8]

        /// The `mac1` the initiation carried: a cookie reply's associated data.
        public var mac1: ArraySlice<UInt8> {
            datagram[HandshakeInitiation.mac1Offset..<(HandshakeInitiation.mac1Offset + MacAuthenticator.macLength)]
        }
    }

    /// A responder's view of an authenticated-so-far initiation.
    public struct ReceivedInitiation {
        /// The Noise state, ready to write message 2 once a pre-shared key is supplied.
        public let noise: NoiseHandshake
        /// The initiator's static key, decrypted from message 1.
        public let initiatorStatic: X25519PublicKey
        /// The initiator's index; the response and later transport packets are addressed to it.
        public let senderIndex: ReceiverIndex
        /// The initiator's timestamp: accept only if newer than the last accepted from this initiator.
        public let timestamp: TAI64N
        /// The responder's receiver index of the keypair the initiator means to replace (a rekey of a connection
        /// both sides hold), or `nil` for a new connection (see ``makeInitiation``).
        public let resumption: ReceiverIndex?
    }

    /// The initiation payload's length: a 12-byte TAI64N timestamp and a 4-byte little-endian resumption index.
    public static let initiationPayloadLength = TAI64N.encodedLength + 4

    /// Starts a handshake: writes message 1 with `timestamp` and `resumption` as payload and stamps `mac1` (and
    /// `mac2` if a cookie from the responder is known).
    ///
    /// `resumption` is the responder's receiver index of the connection's current keypair when this handshake
    /// rekeys a connection the initiator holds established, and `nil` for a new connection. The responder continues
    /// its connection only when the index names one of that connection's keypairs; for `nil` it starts over (the
    /// initiator has no state to continue: it restarted, or its side timed out), so message sequences never
    /// continue across a restart on one side only.
    public static func makeInitiation(
        localStatic: X25519PrivateKey, remoteStatic: X25519PublicKey, presharedKey: SecureBytes, prologue: [UInt8],
        senderIndex: ReceiverIndex, timestamp: TAI64N, resumption: ReceiverIndex? = nil,
        authenticator: MacAuthenticator, cookie: [UInt8]?, using generator: inout some RandomBytesGenerator
    ) throws -> Initiation {
        let noise = try NoiseHandshake(
            configuration: .init(
                pattern: pattern, role: .initiator, prologue: prologue, staticKey: localStatic,
                remoteStaticKey: remoteStatic, presharedKeys: [presharedKey]),
            using: &generator)
        let index = resumption?.rawValue ?? 0
        let payload = timestamp.bytes + (0..<4).map { UInt8(truncatingIfNeeded: index >> (8 * UInt32($0))) }
        let message = try noise.writeMessage(payload: payload)
        let layout = try HandshakeInitiation(
            senderIndex: senderIndex, ephemeral: Array(message[0..<32]), encryptedStatic: Array(message[32..<80]),
            encryptedPayload: Array(message[80..<112]))
        var datagram = try layout.encoded()
        try authenticator.stamp(
            &datagram, mac1Offset: HandshakeInitiation.mac1Offset, mac2Offset: HandshakeInitiation.mac2Offset,
            cookie: cookie)
        return Initiation(noise: noise, senderIndex: senderIndex, remoteStatic: remoteStatic, datagram: datagram)
    }

    /// The same initiation with `mac2` recomputed for a cookie received in a cookie reply (the Noise message is
    /// unchanged, so no new ephemeral key is spent).
    public static func restamp(
        _ initiation: Initiation, authenticator: MacAuthenticator, cookie: [UInt8]
    ) throws -> Initiation {
        var datagram = initiation.datagram
        try authenticator.stamp(
            &datagram, mac1Offset: HandshakeInitiation.mac1Offset, mac2Offset: HandshakeInitiation.mac2Offset,
            cookie: cookie)
        return Initiation(
            noise: initiation.noise, senderIndex: initiation.senderIndex, remoteStatic: initiation.remoteStatic,
            datagram: datagram)
    }

    /// Reads message 1 of a classified, mac1-checked initiation. Throws for forged content (the caller drops it
    /// silently) and for timestamps that are not valid TAI64N.
    public static func readInitiation(
        _ layout: HandshakeInitiation, localStatic: X25519PrivateKey, prologue: [UInt8],
        using generator: inout some RandomBytesGenerator
    ) throws -> ReceivedInitiation {
        let noise = try NoiseHandshake(
            configuration: .init(pattern: pattern, role: .responder, prologue: prologue, staticKey: localStatic),
            using: &generator)
        let payload = try noise.readMessage(layout.ephemeral + layout.encryptedStatic + layout.encryptedPayload)
        guard let initiatorStatic = noise.remoteStaticKey, payload.count == initiationPayloadLength,
            let timestamp = TAI64N(bytes: Array(payload[0..<TAI64N.encodedLength]))
        else {
            throw CryptoError.handshakeMessageTruncated
        }
        let index = payload[TAI64N.encodedLength...].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return ReceivedInitiation(
            noise: noise, initiatorStatic: initiatorStatic, senderIndex: layout.senderIndex, timestamp: timestamp,
            resumption: index == 0 ? nil : ReceiverIndex(index))
    }

    /// Writes message 2 under `presharedKey` (the key that applies to this initiator) and returns the responder's
    /// transport keys with the encoded response.
    public static func makeResponse(
        to received: ReceivedInitiation, presharedKey: SecureBytes, senderIndex: ReceiverIndex,
        authenticator: MacAuthenticator, cookie: [UInt8]?
    ) throws -> (keys: NoiseHandshake.TransportKeys, datagram: [UInt8]) {
        try received.noise.supplyPresharedKeys([presharedKey])
        let message = try received.noise.writeMessage()
        let layout = try HandshakeResponse(
            senderIndex: senderIndex, receiverIndex: received.senderIndex, ephemeral: Array(message[0..<32]),
            encryptedNothing: Array(message[32..<48]))
        var datagram = try layout.encoded()
        try authenticator.stamp(
            &datagram, mac1Offset: HandshakeResponse.mac1Offset, mac2Offset: HandshakeResponse.mac2Offset,
            cookie: cookie)
        return (try received.noise.split(), datagram)
    }

    /// Reads message 2 for a pending initiation and returns the initiator's transport keys.
    public static func readResponse(
        _ layout: HandshakeResponse, for initiation: Initiation
    ) throws -> NoiseHandshake.TransportKeys {
        _ = try initiation.noise.readMessage(layout.ephemeral + layout.encryptedNothing)
        return try initiation.noise.split()
    }
}
