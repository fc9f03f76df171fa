/// Counters of everything an endpoint dropped or did, so silent drops are still visible.
public struct EndpointStatistics: Sendable, Hashable {
    /// Datagrams handed to ``Endpoint/handle(datagram:from:now:)``.
    public var datagramsReceived = 0
    /// Dropped before any cryptography: wrong size, unknown type, non-zero reserved bytes.
    public var malformedDropped = 0
    /// Initiations or responses whose `mac1` did not verify (no Diffie-Hellman was done for them).
    public var mac1Failures = 0
    /// Keyed hashes computed to check received `mac1` fields before any Diffie-Hellman: at most one per distinct
    /// `macSecret` (one for all members of a session, one per open admission) for an initiation, one for a response
    /// (TEST-MATRIX D1). Not a drop counter.
    public var mac1Computations = 0
    /// Initiations processed with Diffie-Hellman (a stranger's datagrams never count here).
    public var initiationsProcessed = 0
    /// Initiations that failed Noise processing (forged, wrong prologue, low-order keys).
    public var handshakeFailures = 0
    /// Initiations from static keys that are not authorized peers (TEST-MATRIX H3).
    public var unknownPeerDropped = 0
    /// Initiations whose timestamp was not newer than the last accepted one (replays, H6).
    public var staleTimestampDropped = 0
    /// Initiations that came too soon after an accepted one (floods, H7).
    public var floodDropped = 0
    /// Initiations under load with a valid cookie from a source over its share
    /// (``ProtocolLimits/initiationsPerSecondPerSource``; D2).
    public var initiationsRateLimited = 0
    /// Initiations dropped because our own concurrent initiation wins the tie-break (H9).
    public var simultaneousInitiationsDropped = 0
    /// Initiations dropped because they resume a connection this endpoint no longer has (the resumption index names
    /// none of its keypairs with that peer).
    public var staleResumptionsDropped = 0
    /// Established connections replaced by a peer's new connection (it restarted, or its side ended).
    public var connectionsSuperseded = 0
    /// Exact duplicates of an answered initiation, answered again with the same response.
    public var duplicateInitiationsAnswered = 0
    /// Cookie replies sent while under load.
    public var cookieRepliesSent = 0
    /// Cookie replies received and accepted.
    public var cookieRepliesAccepted = 0
    /// Initiations of another protocol revision (a valid `mac1`, an unreadable Noise message) answered with a
    /// handshake refusal naming this endpoint's prologue; each is also counted in ``handshakeFailures``.
    public var refusalsSent = 0
    /// Handshake refusals received that ended a connection being set up (the peer speaks another revision).
    public var refusalsAccepted = 0
    /// Handshake initiations sent (first attempts, retries and rekeys).
    public var initiationsSent = 0
    /// Handshake responses sent.
    public var responsesSent = 0
    /// Responses, cookie replies or refusals for no pending handshake, that did not authenticate, or (refusals) that
    /// named this endpoint's own prologue.
    public var responsesDropped = 0
    /// Transport packets for an unknown receiver index.
    public var unknownIndexDropped = 0
    /// Transport packets that failed authentication, were replays, or used an expired keypair.
    public var transportRejected = 0
    /// Initiations from unknown static keys accepted under an admission (an invitation).
    public var admissionsAccepted = 0
    /// Initiations under an admission dropped because ``ProtocolLimits/maxAdmittedPeers`` joiners were pending.
    public var admissionsRefused = 0
    /// Pending peers dropped to make room for a new one because they never completed their handshake (see
    /// ``ProtocolLimits/maxAdmittedPeers``).
    public var admissionsEvicted = 0
    /// Relay packets from an address that is not one of this endpoint's relays, or that did not authenticate; and
    /// RELAY_SEND packets too large for this endpoint to forward as a member relay.
    public var relayPacketsDropped = 0
    /// Packets received through a relay.
    public var relayedPacketsReceived = 0
    /// Packets sent through a relay.
    public var relayedPacketsSent = 0
    /// Packets sent through a TURN allocation (ChannelData or Send indications).
    public var turnPacketsSent = 0
    /// Packets received through a TURN allocation.
    public var turnPacketsReceived = 0
    /// Packets for a TURN route that could not go (no allocation, or too large for a Send indication). Not a
    /// receive-drop counter.
    public var turnPacketsDropped = 0
    /// Datagrams from a TURN or STUN server dropped: malformed, on an unbound channel, unexpected, or an answer
    /// matching no request in flight or failing its MESSAGE-INTEGRITY (``TurnClient/datagramsDropped``,
    /// ``StunBindingClient/datagramsDropped``).
    public var turnDatagramsDropped = 0
    /// Datagrams from a port-mapping gateway dropped: malformed, or not an answer to the request in flight
    /// (``PortMappingClient/datagramsDropped``).
    public var portMappingDatagramsDropped = 0
    /// Connections removed (closed, drained, timed out, or replaced); their counters are in
    /// ``Endpoint/closedConnectionStatistics``.
    public var connectionsClosed = 0
    /// Of ``connectionsClosed``, those that never completed a handshake (it timed out, the peer could not be reached
    /// or refused it).
    public var handshakesNeverCompleted = 0

    /// Every counter of received datagrams the endpoint dropped without effect, with a short reason label (the
    /// `reason` of `huddle_datagrams_dropped_total`): malformed, unauthenticated, replayed or stale, for unknown
    /// indices or peers, over a handshake rate, or relay packets from a stranger. Each such datagram is counted in
    /// exactly one of them.
    public static let dropReasons: [(reason: String, count: @Sendable (EndpointStatistics) -> Int)] = [
        ("malformed", { $0.malformedDropped }),
        ("mac1", { $0.mac1Failures }),
        ("handshake", { $0.handshakeFailures }),
        ("unknown_peer", { $0.unknownPeerDropped }),
        ("stale_timestamp", { $0.staleTimestampDropped }),
        ("flood", { $0.floodDropped }),
        ("rate_limited", { $0.initiationsRateLimited }),
        ("simultaneous_initiation", { $0.simultaneousInitiationsDropped }),
        ("response", { $0.responsesDropped }),
        ("unknown_index", { $0.unknownIndexDropped }),
        ("rejected", { $0.transportRejected }),
        ("relay", { $0.relayPacketsDropped }),
        ("turn", { $0.turnDatagramsDropped }),
        ("port_mapping", { $0.portMappingDatagramsDropped }),
    ]

    /// Received datagrams dropped without effect: the sum of ``dropReasons``.
    public var datagramsDropped: Int { Self.dropReasons.reduce(0) { $0 + $1.count(self) } }
}
