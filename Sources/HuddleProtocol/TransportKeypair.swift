import HuddleCrypto
import HuddleWire

/// The keys one completed handshake produced, as WireGuard's keypair: a send key, a receive key with its own
/// replay window, the indices both sides use to address packets, and when it was made.
///
/// Packet numbers belong to the connection, not the keypair: they keep rising across rekeys, so a (key, nonce)
/// pair is never reused and the ACK space stays continuous.
public struct TransportKeypair: Sendable {
    /// The index peers put in packets addressed to us under this keypair.
    public let localIndex: ReceiverIndex
    /// The index we put in packets addressed to the peer.
    public let remoteIndex: ReceiverIndex
    /// Whether we initiated the handshake that made this keypair.
    public let isInitiator: Bool
    /// When the handshake completed.
    public let created: Instant
    let sendKey: SymmetricKey
    let receiveKey: SymmetricKey
    /// Replay protection for packets received under this keypair.
    public internal(set) var replayWindow = ReplayWindow()
    /// Packets addressed to this keypair whose authentication failed (forgeries, or damage in transit).
    public internal(set) var authenticationFailures: UInt64 = 0
    /// Whether reaching the integrity limit was counted in the connection's statistics.
    var exhaustionCounted = false

    /// A keypair from a finished handshake.
    public init(
        keys: NoiseHandshake.TransportKeys, localIndex: ReceiverIndex, remoteIndex: ReceiverIndex, isInitiator: Bool,
        created: Instant
    ) throws {
        guard let send = keys.sending.key, let receive = keys.receiving.key else {
            throw CryptoError.missingKey("transport keys from a completed handshake")
        }
        sendKey = send
        receiveKey = receive
        self.localIndex = localIndex
        self.remoteIndex = remoteIndex
        self.isInitiator = isInitiator
        self.created = created
    }

    /// Seals a transport packet in place. `buffer` holds the 16-byte header followed by `payloadLength` bytes of
    /// frames and has room for the 16-byte tag after them; the header is written here. Returns the datagram length.
    func seal(
        _ buffer: UnsafeMutableRawBufferPointer, payloadLength: Int, packetNumber: UInt64, flags: TransportFlags = []
    ) throws -> Int {
        let header = TransportHeader(flags: flags, receiverIndex: remoteIndex, packetNumber: PacketNumber(packetNumber))
        var writer = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<TransportHeader.encodedLength]))
        try header.encode(into: &writer)
        let headerBytes = UnsafeRawBufferPointer(rebasing: buffer[0..<TransportHeader.encodedLength])
        let body = UnsafeMutableRawBufferPointer(rebasing: buffer[TransportHeader.encodedLength...])
        let sealed = ChaChaPoly.sealInPlace(
            combined: body, plaintextLength: payloadLength, nonce: .init(counter: packetNumber),
            authenticating: headerBytes, key: sendKey)
        return TransportHeader.encodedLength + sealed
    }

    /// Opens a transport packet in place after the replay pre-check; on success records the packet number and
    /// returns the plaintext frames' range within `datagram`. Returns `nil` (changing nothing but the zeroed
    /// ciphertext and the failure count) for a replayed, too old or forged packet, and for every packet once
    /// `failureLimit` packets failed authentication under this keypair (its integrity limit: it is rekeyed).
    mutating func open(
        _ datagram: UnsafeMutableRawBufferPointer, header: TransportHeader, failureLimit: UInt64
    ) -> Range<Int>? {
        let number = header.packetNumber.rawValue
        guard authenticationFailures < failureLimit, replayWindow.wouldAccept(number) else { return nil }
        let headerBytes = UnsafeRawBufferPointer(rebasing: datagram[0..<TransportHeader.encodedLength])
        let body = UnsafeMutableRawBufferPointer(rebasing: datagram[TransportHeader.encodedLength...])
        guard
            let length = try? ChaChaPoly.openInPlace(
                combined: body, nonce: .init(counter: number), authenticating: headerBytes, key: receiveKey)
        else {
            authenticationFailures += 1
            return nil
        }
        guard replayWindow.accept(number) else { return nil }
        return TransportHeader.encodedLength..<(TransportHeader.encodedLength + length)
    }

    /// Whether this keypair reached its integrity limit (``ConnectionConfiguration/maxAuthenticationFailuresPerKeypair``).
    func isExhausted(failureLimit: UInt64) -> Bool { authenticationFailures >= failureLimit }

    /// Whether this keypair is exhausted and that was not noted before (it is noted now).
    mutating func noteExhaustion(failureLimit: UInt64) -> Bool {
        guard isExhausted(failureLimit: failureLimit), !exhaustionCounted else { return false }
        exhaustionCounted = true
        return true
    }
}
