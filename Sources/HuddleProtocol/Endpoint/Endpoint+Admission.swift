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

    /// The admission whose `mac1` key authenticates `initiation`, if any.
    func admissionAuthenticating(_ initiation: [UInt8]) -> AdmissionID? {
        admissions.first { $0.value.incoming.hasValidMac1(initiation, mac1Offset: HandshakeInitiation.mac1Offset) }?
            .key
    }

    /// Makes `initiator` a pending peer under `admission`, or returns `false` (counted) when too many are pending.
    mutating func admit(_ initiator: X25519PublicKey, under admission: AdmissionID) -> Bool {
        guard let credentials = admissions[admission]?.credentials,
            admittedPeers.count < ProtocolLimits.maxAdmittedPeers
        else {
            statistics.admissionsRefused += 1
            return false
        }
        do {
            try addPeer(
                PeerCredentials(
                    staticKey: initiator, presharedKey: credentials.presharedKey, macSecret: credentials.macSecret))
        } catch {
            return false
        }
        admittedPeers[initiator] = admission
        statistics.admissionsAccepted += 1
        return true
    }
}
