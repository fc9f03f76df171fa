import HuddleCrypto
import HuddleWire

/// One endpoint's registration at one relay, as a sans-IO state machine: REGISTER, answer the CHALLENGE with a MAC
/// proving the static key, then refresh every ``ProtocolLimits/relayRefreshInterval`` (which also keeps NAT
/// mappings toward the relay open). The relay's confirmations carry this node's reflexive address.
struct RelayClient {
    /// The relay's UDP address.
    let address: NetworkAddress
    /// The session member relaying, when the relay is one (``Endpoint/addMemberRelay(_:at:now:)``); `nil` for a
    /// dedicated relay.
    let member: X25519PublicKey?
    /// The relay's static key and the MAC key shared with it, once a challenge named them.
    private(set) var relayKey: X25519PublicKey?
    private var authenticator: RelayAuthenticator?
    /// The latest challenge token.
    private var token: [UInt8]?
    /// When the relay last confirmed the registration.
    private(set) var confirmedAt: Instant?
    /// This node's address as the relay last saw it.
    private(set) var observed: NetworkAddress?
    /// When the next REGISTER goes out.
    private(set) var nextRegisterAt: Instant
    /// REGISTERs sent since the last confirmation (for the retry backoff).
    private var unanswered = 0

    /// REGISTERs sent since the relay last confirmed (or ever, when it never did).
    var unansweredRegistrations: Int { unanswered }

    init(address: NetworkAddress, member: X25519PublicKey? = nil, now: Instant) {
        self.address = address
        self.member = member
        nextRegisterAt = now
    }

    /// Whether the relay confirmed the registration recently enough that it forwards for us.
    func isRegistered(now: Instant) -> Bool {
        confirmedAt.map { now - $0 < ProtocolLimits.relayRegistrationLifetime } ?? false
    }

    /// The REGISTER to send now, if one is due.
    mutating func registerIfDue(identity: Identity, now: Instant) -> [UInt8]? {
        guard now >= nextRegisterAt else { return nil }
        unanswered += 1
        let retry = min(
            ProtocolLimits.relayRetryInterval * (1 << min(unanswered - 1, 3)), ProtocolLimits.relayRefreshInterval)
        nextRegisterAt = now + (isRegistered(now: now) ? ProtocolLimits.relayRefreshInterval : retry)
        return makeRegister(identity: identity)
    }

    /// Handles RELAY_CHALLENGE: returns the REGISTER that answers it (with the token and the key proof).
    mutating func handleChallenge(_ challenge: RelayChallenge, identity: Identity) -> [UInt8]? {
        guard let key = try? X25519PublicKey(bytes: challenge.relayKey) else { return nil }
        if key != relayKey {
            guard let authenticator = try? RelayAuthenticator(local: identity.agreementKey, remote: key) else {
                return nil
            }
            self.authenticator = authenticator
            relayKey = key
        }
        token = challenge.token
        return makeRegister(identity: identity)
    }

    /// Handles RELAY_REGISTERED: returns whether it authenticated (and updates the reflexive address).
    mutating func handleRegistered(_ datagram: UnsafeRawBufferPointer, now: Instant) -> Bool {
        guard let authenticator, let registered = try? RelayRegistered(decoding: datagram),
            authenticator.verify(registered.mac, of: datagram[0..<RelayRegistered.macOffset])
        else { return false }
        confirmedAt = now
        unanswered = 0
        observed = NetworkAddress(wire: registered.observed)
        nextRegisterAt = now + ProtocolLimits.relayRefreshInterval
        return true
    }

    private func makeRegister(identity: Identity) -> [UInt8]? {
        let zeros = [UInt8](repeating: 0, count: 16)
        guard
            var packet = try? RelayRegister(
                clientKey: identity.agreementKey.publicKey.bytes, token: token ?? zeros, mac: zeros),
            var bytes = try? packet.encoded()
        else { return nil }
        if let authenticator, token != nil {
            packet.mac = authenticator.mac(bytes[0..<RelayRegister.macOffset])
            bytes.replaceSubrange(RelayRegister.macOffset..<RelayRegister.encodedLength, with: packet.mac)
        }
        return bytes
    }
}
