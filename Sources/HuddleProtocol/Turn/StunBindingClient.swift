import HuddleWire

/// Asks one STUN server (RFC 8489 Binding) where it sees this node, from the node's own socket, as a sans-IO
/// machine inside the ``Endpoint``: the answer's XOR-MAPPED-ADDRESS is a reflexive address of this node's (offered
/// in CANDIDATES, and advertised by a node that asks). It asks again every ``ProtocolLimits/stunRefreshInterval``,
/// which also keeps a NAT's mapping toward the server open and notices when it moves.
///
/// A request goes again after 0.5 and 1.5 s (RFC 8489's doubling, ``ProtocolLimits/stunRequestAttempts`` sends); an
/// answer counts only when it carries the request's 96-bit random transaction ID, so an off-path attacker cannot
/// plant an address. Binding needs no credentials, and the answer has no integrity to check.
public struct StunBindingClient {
    /// The server's UDP address.
    public let server: NetworkAddress
    /// Where the server last saw this node, once it answered.
    public private(set) var mappedAddress: NetworkAddress?
    /// Datagrams from the server dropped: not an answer to the request in flight, or without a usable address.
    public private(set) var datagramsDropped = 0

    private var request: (transactionID: [UInt8], bytes: [UInt8], attempts: Int, retransmitAt: Instant)?
    private var nextQueryAt: Instant
    private var outbox: [[UInt8]] = []

    /// A client for `server`; the first request goes at the first ``handleTimeout(now:using:)``.
    public init(server: NetworkAddress, now: Instant) {
        self.server = server
        nextQueryAt = now
    }

    /// When ``handleTimeout(now:using:)`` has something to do.
    public var nextDeadline: Instant { request?.retransmitAt ?? nextQueryAt }

    /// The next datagram for the server, if any.
    public mutating func pollTransmit() -> [UInt8]? {
        outbox.isEmpty ? nil : outbox.removeFirst()
    }

    /// Sends what is due at `now`: a new request, or the one in flight again.
    public mutating func handleTimeout(now: Instant, using random: inout some RandomNumberGenerator) {
        if var pending = request, pending.retransmitAt <= now {
            guard pending.attempts < ProtocolLimits.stunRequestAttempts else {
                // Unanswered: asked again at the next refresh.
                request = nil
                return
            }
            pending.attempts += 1
            pending.retransmitAt = now + ProtocolLimits.turnInitialRetransmission * (1 << (pending.attempts - 1))
            request = pending
            outbox.append(pending.bytes)
        }
        guard request == nil, nextQueryAt <= now else { return }
        nextQueryAt = now + ProtocolLimits.stunRefreshInterval
        let transactionID = (0..<12).map { _ in UInt8.random(in: 0...255, using: &random) }
        let bytes = StunMessage(method: .binding, messageClass: .request, transactionID: transactionID)
            .encoded(fingerprint: true)
        request = (transactionID, bytes, 1, now + ProtocolLimits.turnInitialRetransmission)
        outbox.append(bytes)
    }

    /// Handles a datagram from the server; returns the mapped address it reports, if it is the answer to the request
    /// in flight (anything else is dropped and counted).
    public mutating func handle(_ datagram: UnsafeRawBufferPointer) -> NetworkAddress? {
        guard let pending = request, let message = try? StunMessage(decoding: datagram),
            message.messageClass == .success, message.transactionID == pending.transactionID,
            let attribute = message.attribute(StunAttribute.xorMappedAddress),
            let wire = try? attribute.xorAddress(transactionID: message.transactionID),
            let mapped = NetworkAddress(wire: wire)
        else {
            datagramsDropped += 1
            return nil
        }
        request = nil
        mappedAddress = mapped
        return mapped
    }
}
