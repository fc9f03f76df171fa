import DequeModule
import HuddleCrypto
import HuddleWire

/// A Huddle relay as a sans-IO state machine: nodes register their static keys (proving them), and the relay
/// forwards sealed packets between registered nodes and tells each the address it sees it at.
///
/// It never holds session keys: a forwarded packet is a Huddle datagram sealed end to end, and the relay reads only
/// the 36-byte envelope header. It is not an open proxy: it forwards only from a registered client's address to
/// another registered client, and at most ``RelayServerConfiguration/bytesPerSecondPerClient`` per client.
/// Unauthenticated input costs no Diffie-Hellman and no state: a REGISTER without a valid token (bound to the
/// sender's address and a time window) only draws a 52-byte challenge, smaller than the 68-byte REGISTER; so does a
/// RELAY_SEND from an unregistered address (a client whose NAT mapping changed learns to register again).
public struct RelayServer {
    /// The configuration.
    public let configuration: RelayServerConfiguration
    /// Counters.
    public private(set) var statistics = RelayServerStatistics()

    private struct Client {
        var address: NetworkAddress
        var authenticator: RelayAuthenticator
        var refreshedAt: Instant
        var tokens: Double
        var tokensUpdatedAt: Instant
    }

    private var clients: [X25519PublicKey: Client] = [:]
    private var keyByAddress: [NetworkAddress: X25519PublicKey] = [:]
    private var tokenSecret: SecureBytes
    private var outbox = Deque<(NetworkAddress, [UInt8])>()
    private var events = Deque<RelayServerEvent>()
    private var lastExpiry = Instant.zero

    /// A relay with `configuration`; its token secret comes from `generator`.
    public init(configuration: RelayServerConfiguration, generator: inout some RandomBytesGenerator) {
        self.configuration = configuration
        let secret = generator.bytes(count: 32)
        tokenSecret = SecureBytes(count: 32) { $0.copyBytes(from: secret) }
    }

    /// The relay's static key, which its challenges carry.
    public var staticKey: X25519PublicKey { configuration.identity.agreementKey.publicKey }

    /// Clients registered now.
    public var registrationCount: Int { clients.count }

    /// The static keys allowed to register, or `nil` for any key that proves itself (a dedicated relay). A member
    /// relaying for its session's other members admits only them (``admit(only:)``).
    public private(set) var admittedKeys: Set<X25519PublicKey>?

    /// Limits registration to `keys` (`nil`: any key). Registrations of keys no longer admitted end at once, each
    /// reported as ``RelayServerEvent/EndReason/notAdmitted``; a REGISTER from another key is dropped before any
    /// challenge or Diffie-Hellman and counted in ``RelayServerStatistics/registrationsRefused``.
    public mutating func admit(only keys: Set<X25519PublicKey>?) {
        admittedKeys = keys
        guard let keys else { return }
        for (key, client) in clients where !keys.contains(key) {
            clients[key] = nil
            if keyByAddress[client.address] == key { keyByAddress[client.address] = nil }
            report(.unregistered(key, reason: .notAdmitted))
        }
    }

    /// The next registration change, oldest first; `nil` when none is waiting.
    public mutating func pollEvent() -> RelayServerEvent? { events.popFirst() }

    /// Forgets registrations that have expired by `now`. Call it about once a second: expiry is otherwise only
    /// noticed when a datagram arrives, and an idle relay would never report a client gone.
    public mutating func handleTimeout(now: Instant) {
        expireIfDue(now: now)
    }

    /// Handles one datagram from `source`. Returns where to send it when it is to be forwarded: the datagram was
    /// then rewritten in place into a RELAY_DELIVER naming its sender, of the same length. Replies (challenges,
    /// confirmations) wait in ``pollTransmit()``.
    public mutating func handle(
        datagram: UnsafeMutableRawBufferPointer, from source: NetworkAddress, now: Instant
    ) -> NetworkAddress? {
        statistics.datagramsReceived += 1
        expireIfDue(now: now)
        guard let type = try? PacketClassifier.classify(UnsafeRawBufferPointer(datagram)) else {
            statistics.malformedDropped += 1
            return nil
        }
        switch type {
        case .relayRegister:
            handleRegister(UnsafeRawBufferPointer(datagram), from: source, now: now)
            return nil
        case .relaySend:
            return forward(datagram, from: source, now: now)
        default:
            statistics.malformedDropped += 1
            return nil
        }
    }

    /// The next reply to send, or `nil`.
    public mutating func pollTransmit() -> (destination: NetworkAddress, datagram: [UInt8])? {
        outbox.popFirst().map { (destination: $0.0, datagram: $0.1) }
    }

    private mutating func handleRegister(_ datagram: UnsafeRawBufferPointer, from source: NetworkAddress, now: Instant)
    {
        guard let register = try? RelayRegister(decoding: datagram),
            let key = try? X25519PublicKey(bytes: register.clientKey)
        else {
            statistics.malformedDropped += 1
            return
        }
        if let admittedKeys, !admittedKeys.contains(key) {
            statistics.registrationsRefused += 1
            return
        }
        guard isValid(token: register.token, for: source, now: now) else {
            sendChallenge(to: source, now: now)
            return
        }
        // The agreement is computed once per client key and address; a refresh reuses it.
        let authenticator: RelayAuthenticator
        if let client = clients[key], client.address == source {
            authenticator = client.authenticator
        } else {
            guard let fresh = try? RelayAuthenticator(local: configuration.identity.agreementKey, remote: key) else {
                statistics.registrationsRefused += 1
                return
            }
            authenticator = fresh
        }
        guard authenticator.verify(register.mac, of: datagram[0..<RelayRegister.macOffset]) else {
            statistics.registrationsRefused += 1
            return
        }
        if var client = clients[key] {
            if client.address != source {
                keyByAddress[client.address] = nil
                client.address = source
                client.authenticator = authenticator
                report(.registered(key, address: source))
            }
            client.refreshedAt = now
            clients[key] = client
        } else {
            guard clients.count < configuration.maxRegistrations else {
                statistics.registrationsOverLimit += 1
                return
            }
            clients[key] = Client(
                address: source, authenticator: authenticator, refreshedAt: now,
                tokens: Double(configuration.burstBytesPerClient), tokensUpdatedAt: now)
            report(.registered(key, address: source))
        }
        // One registration per address: a client that moved leaves its old address free for another.
        if let previous = keyByAddress[source], previous != key {
            clients[previous] = nil
            report(.unregistered(previous, reason: .displaced))
        }
        keyByAddress[source] = key
        statistics.registrationsConfirmed += 1
        guard var reply = try? RelayRegistered(observed: source.wireAddress, mac: [UInt8](repeating: 0, count: 16)),
            var bytes = try? reply.encoded()
        else { return }
        reply.mac = authenticator.mac(bytes[0..<RelayRegistered.macOffset])
        bytes.replaceSubrange(RelayRegistered.macOffset..<RelayRegistered.encodedLength, with: reply.mac)
        outbox.append((source, bytes))
    }

    private mutating func forward(
        _ datagram: UnsafeMutableRawBufferPointer, from source: NetworkAddress, now: Instant
    ) -> NetworkAddress? {
        guard let sender = keyByAddress[source], var client = clients[sender] else {
            statistics.unregisteredSourceDropped += 1
            // A client whose NAT mapping changed sends from an address the relay does not know: the challenge (smaller
            // than what it answers) tells it to register again from there.
            sendChallenge(to: source, now: now)
            return nil
        }
        guard let destinationKey = try? X25519PublicKey(bytes: RelayEnvelope.key(of: UnsafeRawBufferPointer(datagram))),
            let destination = clients[destinationKey]
        else {
            statistics.unknownDestinationDropped += 1
            return nil
        }
        // Token bucket: the rate refills it, the burst caps it.
        let elapsed = Double((now - client.tokensUpdatedAt).nanoseconds) / 1e9
        client.tokens = min(
            Double(configuration.burstBytesPerClient),
            client.tokens + elapsed * Double(configuration.bytesPerSecondPerClient))
        client.tokensUpdatedAt = now
        guard client.tokens >= Double(datagram.count) else {
            clients[sender] = client
            statistics.rateLimitedDropped += 1
            statistics.rateLimitedBytes += datagram.count
            return nil
        }
        client.tokens -= Double(datagram.count)
        clients[sender] = client
        RelayEnvelope.writeHeader(.relayDeliver, key: sender.bytes, into: datagram)
        statistics.packetsForwarded += 1
        statistics.bytesForwarded += datagram.count
        return destination.address
    }

    private mutating func sendChallenge(to source: NetworkAddress, now: Instant) {
        guard let challenge = try? RelayChallenge(relayKey: staticKey.bytes, token: token(for: source, now: now)),
            let bytes = try? challenge.encoded()
        else { return }
        statistics.challengesSent += 1
        outbox.append((source, bytes))
    }

    /// `BLAKE2b-128(key: secret, address || window)`, the window counted in ``ProtocolLimits/relayTokenWindow`` units
    /// of the relay's clock. It proves the client receives at its address; the MAC proves its key.
    private func token(for source: NetworkAddress, now: Instant, windowsAgo: Int64 = 0) -> [UInt8] {
        let window = now.nanoseconds / ProtocolLimits.relayTokenWindow.nanoseconds - windowsAgo
        var hash = try! BLAKE2b(outputLength: 16, key: tokenSecret)
        hash.update(source.canonicalBytes)
        hash.update((0..<8).map { UInt8(truncatingIfNeeded: window >> (8 * $0)) })
        return hash.finalize()
    }

    private func isValid(token: [UInt8], for source: NetworkAddress, now: Instant) -> Bool {
        ConstantTime.equals(token, self.token(for: source, now: now))
            || ConstantTime.equals(token, self.token(for: source, now: now, windowsAgo: 1))
    }

    /// Forgets registrations not refreshed within ``ProtocolLimits/relayServerRegistrationLifetime`` (looked at
    /// once a second at most).
    private mutating func expireIfDue(now: Instant) {
        guard now - lastExpiry >= .seconds(1) else { return }
        lastExpiry = now
        for (key, client) in clients where now - client.refreshedAt >= ProtocolLimits.relayServerRegistrationLifetime {
            clients[key] = nil
            if keyByAddress[client.address] == key { keyByAddress[client.address] = nil }
            report(.unregistered(key, reason: .expired))
        }
    }

    /// Queues `event` for ``pollEvent()``, dropping the oldest at ``ProtocolLimits/relayServerEventQueueLimit``.
    private mutating func report(_ event: RelayServerEvent) {
        if events.count >= ProtocolLimits.relayServerEventQueueLimit {
            events.removeFirst()
            statistics.eventsDropped += 1
        }
        events.append(event)
    }
}
