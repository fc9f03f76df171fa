import HuddleCrypto
import HuddleWire

/// Names one admission (for example an invitation) on an endpoint; the caller chooses the value.
public struct AdmissionID: Hashable, Sendable, CustomStringConvertible {
    /// The caller's identifier.
    public var rawValue: UInt64

    /// An admission identifier.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public var description: String { "admission \(rawValue)" }
}

/// Secrets that let peers this endpoint does not know yet complete a handshake: whoever holds them (a joiner with an
/// invitation ticket) can authenticate `mac1` and complete Noise IKpsk2 with `presharedKey`.
public struct AdmissionCredentials: Sendable {
    /// The pre-shared key mixed into handshakes with admitted peers.
    public var presharedKey: SecureBytes
    /// The secret `mac1` keys derive from: without it an initiation costs this endpoint one keyed hash.
    public var macSecret: SecureBytes

    /// Credentials for one admission.
    public init(presharedKey: SecureBytes, macSecret: SecureBytes) {
        self.presharedKey = presharedKey
        self.macSecret = macSecret
    }
}

extension Endpoint {
    /// An admission's credentials and the `mac1` key derived from them for messages sent to this endpoint.
    struct Admission {
        var credentials: AdmissionCredentials
        var incoming: MacAuthenticator
    }

    /// Opens an admission: initiations whose `mac1` verifies under `credentials.macSecret` are accepted from static
    /// keys this endpoint has never seen, with `credentials.presharedKey`. The initiator becomes a pending peer
    /// (see ``admission(of:)``) until ``addPeer(_:)`` confirms it; if its connection ends first it is forgotten.
    /// Replaces earlier credentials with the same `id`.
    ///
    /// - Throws: ``ProtocolError/admissionLimitReached(limit:)`` when ``ProtocolLimits/maxAdmissions`` are open.
    public mutating func addAdmission(_ id: AdmissionID, credentials: AdmissionCredentials) throws(ProtocolError) {
        guard admissions[id] != nil || admissions.count < ProtocolLimits.maxAdmissions else {
            throw .admissionLimitReached(limit: ProtocolLimits.maxAdmissions)
        }
        guard let incoming = try? MacAuthenticator(macSecret: credentials.macSecret, receiverStatic: staticKey) else {
            preconditionFailure("keyed BLAKE2b with a 32-byte key cannot fail")
        }
        admissions[id] = Admission(credentials: credentials, incoming: incoming)
    }

    /// Closes an admission: no new handshakes are accepted under it. Connections it already admitted continue.
    public mutating func removeAdmission(_ id: AdmissionID) {
        admissions[id] = nil
    }

    /// The admission that let `peer` in, while it is pending; `nil` for peers added with ``addPeer(_:)``.
    public func admission(of peer: X25519PublicKey) -> AdmissionID? {
        admittedPeers[peer]
    }

    /// The pending peer whose connection has waited longest for the first packet under our answer, if any pending
    /// peer has not completed its handshake: one that did not prove its address first, then one that did, when
    /// `includingProved` or once it has waited ``ProtocolLimits/unconfirmedAdmissionGrace`` (an honest joiner
    /// confirms within a round trip; a flood of cookie-answering initiations that never confirm must not hold every
    /// slot until their handshakes time out, 90 s after the flood ended).
    func oldestUnconfirmedAdmittedPeer(includingProved: Bool, now: Instant) -> X25519PublicKey? {
        if let unproved = oldestUnconfirmed(admittedPeers.keys.filter { !provedAdmittedPeers.contains($0) }) {
            return unproved.peer
        }
        guard let proved = oldestUnconfirmed(Array(provedAdmittedPeers)) else { return nil }
        if includingProved { return proved.peer }
        guard proved.since.map({ now - $0 >= ProtocolLimits.unconfirmedAdmissionGrace }) ?? true else { return nil }
        return proved.peer
    }

    /// The candidate that has waited longest without completing its handshake, with when it started waiting (`nil`:
    /// its connection is gone).
    private func oldestUnconfirmed(_ candidates: [X25519PublicKey]) -> (peer: X25519PublicKey, since: Instant?)? {
        var oldest: (peer: X25519PublicKey, since: Instant?)?
        for peer in candidates {
            // A pending peer whose connection is already gone holds a slot for nothing: it goes first.
            guard let id = connectionByPeer[peer], let slot = connections.slot(of: id) else { return (peer, nil) }
            // Two fields read in place (binding the connection would copy it, and retain every buffer it holds).
            let waiting: Instant? =
                connections.slots[slot]?.state == .connecting
                ? (connections.slots[slot]?.lastInitiationAcceptedAt ?? .zero) : nil
            guard let waiting else { continue }
            if oldest.map({ waiting < ($0.since ?? .zero) }) ?? true { oldest = (peer, waiting) }
        }
        return oldest
    }

    /// The admission whose `mac1` key authenticates `initiation`, if any: one keyed hash per open admission.
    mutating func admissionAuthenticating(_ initiation: [UInt8]) -> AdmissionID? {
        for (id, admission) in admissions
        where verifyMac1(initiation, with: admission.incoming, at: HandshakeInitiation.mac1Offset) {
            return id
        }
        return nil
    }

    /// The peers' `mac1` key that authenticates `initiation`, if any: one keyed hash per distinct key
    /// (``peerMacKeys``), however many peers share it.
    mutating func peerMacKeyAuthenticating(_ initiation: [UInt8]) -> MacAuthenticator? {
        for key in peerMacKeys where verifyMac1(initiation, with: key.incoming, at: HandshakeInitiation.mac1Offset) {
            return key.incoming
        }
        return nil
    }

    /// Whether `authenticator` verifies the `mac1` at `offset` of handshake message `bytes`, counted in
    /// ``EndpointStatistics/mac1Computations``.
    mutating func verifyMac1(_ bytes: [UInt8], with authenticator: MacAuthenticator, at offset: Int) -> Bool {
        statistics.mac1Computations += 1
        return authenticator.hasValidMac1(bytes, mac1Offset: offset)
    }

    /// Makes `initiator` a pending peer under `admission`, or returns `false` (counted) when too many are pending.
    ///
    /// When ``ProtocolLimits/maxAdmittedPeers`` are pending, the one that has waited longest without completing its
    /// handshake (no authenticated packet under the keys we answered with) makes room: a ticket holder replaying
    /// initiations it never completes cannot keep every slot (and so every new join) for the 90 s handshake timeout.
    /// A pending peer that `proved` its source address (a valid cookie, under load) is displaced only by another
    /// that did. When no pending peer can be displaced the new one is refused.
    mutating func admit(
        _ initiator: X25519PublicKey, under admission: AdmissionID, proved: Bool, now: Instant
    ) -> Bool {
        guard let credentials = admissions[admission]?.credentials else {
            statistics.admissionsRefused += 1
            return false
        }
        if admittedPeers[initiator] == nil, admittedPeers.count >= ProtocolLimits.maxAdmittedPeers {
            guard let stale = oldestUnconfirmedAdmittedPeer(includingProved: proved, now: now) else {
                statistics.admissionsRefused += 1
                return false
            }
            removePeer(stale, now: now)
            statistics.admissionsEvicted += 1
        }
        do {
            try addPeer(
                PeerCredentials(
                    staticKey: initiator, presharedKey: credentials.presharedKey, macSecret: credentials.macSecret))
        } catch {
            return false
        }
        admittedPeers[initiator] = admission
        if proved { provedAdmittedPeers.insert(initiator) } else { provedAdmittedPeers.remove(initiator) }
        statistics.admissionsAccepted += 1
        return true
    }
}
