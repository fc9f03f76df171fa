import DequeModule
import HuddleCrypto
import HuddleWire

/// One allocation on one TURN server (RFC 8656) over UDP or TCP, as a sans-IO state machine: it builds the messages
/// to send to the server, reads the server's, and keeps the allocation, its permissions and its channels alive. Time
/// comes in as `now:` and randomness (transaction IDs) as a generator; the owner sends ``pollTransmit()``'s
/// messages to ``server`` and calls ``handleTimeout(now:using:)`` at ``nextDeadline``.
///
/// - Over TCP the owner also keeps the connection: ``pollStreamCommand()`` says when to open and close it, and
///   ``streamOpened(now:using:)`` and ``streamClosed(now:)`` say how that went. The allocation lives as long as the
///   connection; requests are not retransmitted (TCP does that) but fail after
///   ``ProtocolLimits/turnStreamRequestTimeout``. A client made with `standingBy` waits for ``activate(now:)``.
///
/// - Authentication: the first Allocate goes without credentials; the server's 401 names a realm and a nonce, and
///   every later request carries USERNAME, REALM, NONCE and a MESSAGE-INTEGRITY under `MD5(username:realm:password)`
///   (long-term credentials, RFC 8489 9.2). A 438 (stale nonce) takes the new nonce and sends again. Responses to
///   authenticated requests are accepted only with a valid MESSAGE-INTEGRITY.
/// - Data: a peer this node sends to gets a channel (ChannelBind, which also installs the peer's permission), so
///   data travels as ChannelData with 4 bytes of overhead; until the server confirms the channel, ``sendIndication``
///   wraps data in a Send indication instead. Peers that only send to this node's relayed address need a permission:
///   ``permit(_:now:using:)``.
/// - Lifetimes: the allocation, channels and permissions are refreshed ``ProtocolLimits/turnRefreshMargin`` before
///   they lapse; a Binding indication every ``ProtocolLimits/turnKeepaliveInterval`` keeps a NAT's mapping open.
public struct TurnClient {
    /// The server's address and the transport to it.
    public let server: TurnServerAddress
    private let credentials: TurnCredentials

    /// What the owner does with the TCP connection to the server.
    public enum StreamCommand: Hashable, Sendable {
        /// Connect to the server, then call ``streamOpened(now:using:)`` (or ``streamClosed(now:)`` if it failed).
        case open
        /// Close the connection once what ``pollTransmit()`` gave is written.
        case close
    }

    /// Where the TCP connection to the server stands (UDP clients have none).
    private enum Stream {
        /// Not wanted: a fallback while UDP works.
        case standby
        /// Closed; opened again at `openAt`.
        case closed(openAt: Instant)
        /// Asked to open; waiting for the owner.
        case opening
        case open
    }

    /// The allocation's state.
    private enum State {
        /// No allocation; the next Allocate goes at `retryAt`.
        case unallocated(retryAt: Instant)
        /// An Allocate is in flight.
        case allocating
        /// Granted: peers reach this node at `relayed`; the server saw it at `mapped`.
        case allocated(relayed: NetworkAddress, mapped: NetworkAddress, refreshAt: Instant)
    }

    /// What a request in flight is for.
    private enum Purpose: Hashable {
        case allocate
        case refresh(lifetime: UInt32)
        case permission(ip: [UInt8])
        case channel(peer: NetworkAddress, number: UInt16)
    }

    /// A request in flight: its bytes (resent unchanged on retransmission) and when it goes again.
    private struct PendingRequest {
        let purpose: Purpose
        let bytes: [UInt8]
        let authenticated: Bool
        var attempts: Int
        var retransmitAt: Instant
    }

    /// A channel binding: confirmed by the server or not yet, and when to refresh it.
    private struct Channel {
        let number: UInt16
        var isBound: Bool
        var refreshAt: Instant
    }

    private var state: State
    /// The TCP connection's state; `nil` over UDP.
    private var stream: Stream?
    private var streamCommands: [StreamCommand] = []
    /// Reassembles the server's messages from the TCP stream (the endpoint moves it out while it reads).
    var framer = TurnStreamFramer()
    private var realm: String?
    private var nonce: String?
    private var key: [UInt8]?
    private var pending: [[UInt8]: PendingRequest] = [:]
    private var channels: [NetworkAddress: Channel] = [:]
    private var channelOrder: [NetworkAddress] = []
    private var peerByChannel: [UInt16: NetworkAddress] = [:]
    private var nextChannelNumber = ChannelData.channelNumbers.lowerBound
    /// Permitted IP addresses and when each is refreshed (`nil`: a CreatePermission is in flight or waits for the
    /// allocation).
    private var permissions: [[UInt8]: Instant?] = [:]
    private var permissionOrder: [[UInt8]] = []
    private var nextKeepaliveAt: Instant
    private var outbox = Deque<[UInt8]>()
    /// The bytes in `outbox` (over TCP, bounded by ``ProtocolLimits/maxTurnStreamQueuedBytes`` for peers' packets).
    private var outboxBytes = 0
    private var events: [TurnEvent] = []
    /// Why the latest allocation attempt failed, until one succeeds.
    public private(set) var lastFailure: TurnFailure?
    /// Datagrams from the server dropped: malformed, on an unbound channel, unexpected, or an answer that matches no
    /// request in flight or fails its MESSAGE-INTEGRITY.
    public private(set) var datagramsDropped = 0

    /// A client for `server`; the first Allocate (over TCP, the request to connect) goes at the first
    /// ``handleTimeout(now:using:)``, or, `standingBy`, once ``activate(now:)`` is called.
    public init(server: TurnServerAddress, credentials: TurnCredentials, standingBy: Bool = false, now: Instant) {
        self.server = server
        self.credentials = credentials
        state = .unallocated(retryAt: standingBy ? .distantFuture : now)
        switch server.transport {
        case .udp: stream = nil
        case .tcp: stream = standingBy ? .standby : .closed(openAt: now)
        }
        nextKeepaliveAt = now + ProtocolLimits.turnKeepaliveInterval
    }

    /// Whether the client waits for ``activate(now:)`` (a TCP fallback while UDP works).
    public var isStandingBy: Bool {
        if case .standby = stream { return true }
        return false
    }

    /// Whether requests can go: over UDP always, over TCP once the connection is open.
    private var canSend: Bool {
        switch stream {
        case nil, .open: return true
        default: return false
        }
    }

    /// This node's relayed address, once allocated.
    public var relayedAddress: NetworkAddress? {
        if case .allocated(let relayed, _, _) = state { return relayed }
        return nil
    }

    /// This node's address as the server saw it, once allocated.
    public var mappedAddress: NetworkAddress? {
        if case .allocated(_, let mapped, _) = state { return mapped }
        return nil
    }

    /// The channel number bound to `peer`, once the server confirmed it.
    public func channel(for peer: NetworkAddress) -> UInt16? {
        guard let channel = channels[peer], channel.isBound else { return nil }
        return channel.number
    }

    /// The next message for the server, if any: a datagram over UDP, the next bytes of the stream over TCP.
    public mutating func pollTransmit() -> [UInt8]? {
        guard let bytes = outbox.popFirst() else { return nil }
        outboxBytes -= bytes.count
        return bytes
    }

    /// Queues a peer's packet, framed for the TCP stream (ChannelData or a Send indication), behind what is waiting;
    /// `false` (not queued) when ``ProtocolLimits/maxTurnStreamQueuedBytes`` are already waiting or the connection
    /// is not open. The owner drains the queue only while the connection takes more, so a full socket shows here.
    mutating func queueStreamData(_ bytes: [UInt8]) -> Bool {
        guard case .open = stream, outboxBytes + bytes.count <= ProtocolLimits.maxTurnStreamQueuedBytes else {
            return false
        }
        enqueue(bytes)
        return true
    }

    /// Appends a message for the server.
    private mutating func enqueue(_ bytes: [UInt8]) {
        outbox.append(bytes)
        outboxBytes += bytes.count
    }

    /// What to do with the TCP connection next, if anything.
    public mutating func pollStreamCommand() -> StreamCommand? {
        streamCommands.isEmpty ? nil : streamCommands.removeFirst()
    }

    /// The next event, if any.
    public mutating func pollEvent() -> TurnEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }

    /// When ``handleTimeout(now:using:)`` has something to do.
    public var nextDeadline: Instant {
        var deadline = Instant.distantFuture
        if case .closed(let openAt) = stream { deadline = openAt }
        switch state {
        case .unallocated(let retryAt): if canSend { deadline = min(deadline, retryAt) }
        case .allocating: break
        case .allocated(_, _, let refreshAt): deadline = min(nextKeepaliveAt, refreshAt)
        }
        for request in pending.values { deadline = min(deadline, request.retransmitAt) }
        // Channels and permissions are refreshed only while allocated (they wait for the allocation otherwise).
        guard relayedAddress != nil else { return deadline }
        for channel in channels.values { deadline = min(deadline, channel.refreshAt) }
        for case let refreshAt? in permissions.values { deadline = min(deadline, refreshAt) }
        return deadline
    }

    // MARK: - Asking

    /// Lets `peer`'s IP address send to this node's relayed address (RFC 8656 9), now or once allocated; refreshed
    /// until ``ProtocolLimits/maxTurnPermissions`` newer ones push it out.
    public mutating func permit(_ peer: NetworkAddress, now: Instant, using random: inout some RandomNumberGenerator) {
        let ip = peer.addressBytes
        guard permissions[ip] == nil else { return }
        permissions[ip] = .some(nil)
        permissionOrder.append(ip)
        if permissionOrder.count > ProtocolLimits.maxTurnPermissions {
            permissions[permissionOrder.removeFirst()] = nil
        }
        if relayedAddress != nil { request(.permission(ip: ip), now: now, using: &random) }
    }

    /// Binds a channel to `peer` (which also permits its IP), now or once allocated. ``channel(for:)`` names it once
    /// the server confirms.
    public mutating func bindChannel(
        to peer: NetworkAddress, now: Instant, using random: inout some RandomNumberGenerator
    ) {
        guard channels[peer] == nil else { return }
        let number = nextChannelNumber
        nextChannelNumber =
            number == ChannelData.channelNumbers.upperBound ? ChannelData.channelNumbers.lowerBound : number + 1
        if let previous = peerByChannel[number] { forgetChannel(of: previous) }
        channels[peer] = Channel(number: number, isBound: false, refreshAt: .distantFuture)
        channelOrder.append(peer)
        peerByChannel[number] = peer
        if channelOrder.count > ProtocolLimits.maxTurnChannels { forgetChannel(of: channelOrder[0]) }
        if relayedAddress != nil { request(.channel(peer: peer, number: number), now: now, using: &random) }
    }

    private mutating func forgetChannel(of peer: NetworkAddress) {
        guard let channel = channels.removeValue(forKey: peer) else { return }
        peerByChannel[channel.number] = nil
        channelOrder.removeAll { $0 == peer }
    }

    /// A Send indication carrying `payload` to `peer` through the allocation: for data to a peer whose channel the
    /// server has not confirmed yet.
    public func sendIndication(
        _ payload: UnsafeRawBufferPointer, to peer: NetworkAddress, using random: inout some RandomNumberGenerator
    ) -> [UInt8] {
        let transactionID = Self.transactionID(using: &random)
        return StunMessage(
            method: .send, messageClass: .indication, transactionID: transactionID,
            attributes: [
                .xorAddress(StunAttribute.xorPeerAddress, peer.wireAddress, transactionID: transactionID),
                StunAttribute(type: StunAttribute.data, value: Array(payload)),
            ]
        ).encoded()
    }

    /// Asks the server to delete the allocation (a Refresh with lifetime 0), for a clean shutdown.
    public mutating func deallocate(now: Instant, using random: inout some RandomNumberGenerator) {
        guard relayedAddress != nil else { return }
        request(.refresh(lifetime: 0), now: now, using: &random)
        state = .unallocated(retryAt: .distantFuture)
    }

    // MARK: - The TCP connection

    /// Ends standing by: the connection opens at the next ``handleTimeout(now:using:)``, then the Allocate goes.
    public mutating func activate(now: Instant) {
        guard isStandingBy else { return }
        stream = .closed(openAt: now)
        state = .unallocated(retryAt: now)
    }

    /// Stands by again (UDP works): the allocation is deleted, the connection closed, and what was asked of the
    /// server (permissions, channels) is asked again after the next ``activate(now:)``.
    public mutating func standBy(now: Instant, using random: inout some RandomNumberGenerator) {
        guard let stream, !isStandingBy else { return }
        deallocate(now: now, using: &random)
        // The Refresh just queued is the last thing written; nothing waits for its answer.
        pending.removeAll()
        forgetGrants()
        state = .unallocated(retryAt: .distantFuture)
        if case .closed = stream {} else { streamCommands.append(.close) }
        self.stream = .standby
    }

    /// The owner connected to the server: the Allocate goes at once (at the next ``handleTimeout(now:using:)``).
    public mutating func streamOpened(now: Instant, using random: inout some RandomNumberGenerator) {
        guard case .opening = stream else { return }
        stream = .open
        if case .unallocated = state { state = .unallocated(retryAt: now) }
        handleTimeout(now: now, using: &random)
    }

    /// The connection failed to open, or closed: the allocation is gone with it (RFC 8656 3.1). The client connects
    /// again after ``ProtocolLimits/turnRetryAfterFailure``.
    public mutating func streamClosed(now: Instant) {
        guard let stream else { return }
        let failure: TurnFailure
        switch stream {
        case .standby, .closed: return
        case .opening: failure = .connectionFailed
        case .open: failure = .connectionClosed
        }
        pending.removeAll()
        outbox.removeAll()
        outboxBytes = 0
        framer = TurnStreamFramer()
        self.stream = .closed(openAt: now + ProtocolLimits.turnRetryAfterFailure)
        failed(.allocate, because: failure, now: now)
    }

    /// The stream lost its framing (bytes that are neither STUN nor ChannelData): counted, and the connection is
    /// closed and opened again later.
    mutating func streamBroken(now: Instant) {
        datagramsDropped += 1
        streamCommands.append(.close)
        streamClosed(now: now)
    }

    // MARK: - Time

    /// Sends what is due at `now`: the Allocate, retransmissions, refreshes and the keepalive.
    public mutating func handleTimeout(now: Instant, using random: inout some RandomNumberGenerator) {
        if case .closed(let openAt) = stream, openAt <= now {
            stream = .opening
            streamCommands.append(.open)
        }
        for (transactionID, var request) in pending where request.retransmitAt <= now {
            // Over TCP a request is sent once: the stream retransmits, and a server silent that long is gone.
            guard request.attempts < ProtocolLimits.turnRequestAttempts, stream == nil else {
                pending[transactionID] = nil
                failed(request.purpose, because: .timedOut, now: now)
                continue
            }
            request.attempts += 1
            request.retransmitAt =
                now + ProtocolLimits.turnInitialRetransmission * (1 << min(request.attempts - 1, 6))
            pending[transactionID] = request
            enqueue(request.bytes)
        }
        switch state {
        case .unallocated(let retryAt) where retryAt <= now && canSend:
            state = .allocating
            request(.allocate, now: now, using: &random)
        case .allocated(let relayed, let mapped, let refreshAt) where refreshAt <= now:
            state = .allocated(relayed: relayed, mapped: mapped, refreshAt: .distantFuture)
            request(
                .refresh(lifetime: UInt32(ProtocolLimits.turnRequestedLifetime.components.seconds)), now: now,
                using: &random)
        default: break
        }
        guard relayedAddress != nil else { return }
        for (peer, channel) in channels where channel.refreshAt <= now {
            channels[peer]?.refreshAt = .distantFuture
            request(.channel(peer: peer, number: channel.number), now: now, using: &random)
        }
        for case (let ip, let refreshAt?) in permissions where refreshAt <= now {
            permissions[ip] = .some(nil)
            request(.permission(ip: ip), now: now, using: &random)
        }
        if nextKeepaliveAt <= now {
            nextKeepaliveAt = now + ProtocolLimits.turnKeepaliveInterval
            enqueue(
                StunMessage(
                    method: .binding, messageClass: .indication, transactionID: Self.transactionID(using: &random)
                ).encoded(fingerprint: true))
        }
    }

    // MARK: - Receiving

    /// Handles a datagram from the server. Data from a peer (ChannelData or a Data indication) comes back as the
    /// peer's address and where its bytes are in `datagram` (moved to its start for an indication); responses are
    /// taken in and return `nil`, as does anything malformed, unexpected or unauthenticated (dropped and counted in
    /// ``datagramsDropped``).
    public mutating func handle(
        _ datagram: UnsafeMutableRawBufferPointer, now: Instant, using random: inout some RandomNumberGenerator
    ) -> (peer: NetworkAddress, payload: Range<Int>)? {
        let raw = UnsafeRawBufferPointer(datagram)
        if ChannelData.isChannelData(raw) {
            guard let (number, range) = try? ChannelData.parse(raw), let peer = peerByChannel[number] else {
                datagramsDropped += 1
                return nil
            }
            return (peer, range)
        }
        guard let message = try? StunMessage(decoding: raw) else {
            datagramsDropped += 1
            return nil
        }
        switch message.messageClass {
        case .indication:
            guard message.method == .data, let peerAttribute = message.attribute(StunAttribute.xorPeerAddress),
                let wire = try? peerAttribute.xorAddress(transactionID: message.transactionID),
                let peer = NetworkAddress(wire: wire), let data = message.attribute(StunAttribute.data)?.value
            else {
                datagramsDropped += 1
                return nil
            }
            data.withUnsafeBytes { datagram.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: data.count) }
            return (peer, 0..<data.count)
        case .success, .error:
            if !handleResponse(message, now: now, using: &random) { datagramsDropped += 1 }
            return nil
        case .request:
            datagramsDropped += 1
            return nil
        }
    }

    /// Takes in an answer; returns `false` when it was dropped (no request in flight matches it, or it fails its
    /// MESSAGE-INTEGRITY).
    private mutating func handleResponse(
        _ message: StunMessage, now: Instant, using random: inout some RandomNumberGenerator
    ) -> Bool {
        guard let request = pending[message.transactionID] else { return false }
        if message.messageClass == .error, let error = try? message.attribute(StunAttribute.errorCode)?.errorCode() {
            // 401 and 438 are how the server hands out its realm and nonce; they carry no integrity.
            if error.code == 401 || error.code == 438 {
                pending[message.transactionID] = nil
                let firstChallenge = key == nil
                learnRealmAndNonce(from: message)
                if error.code == 438 || (error.code == 401 && firstChallenge && key != nil) {
                    self.request(request.purpose, now: now, using: &random)
                } else {
                    failed(request.purpose, because: .unauthorized, now: now)
                }
                return true
            }
            guard isAuthentic(message, for: request) else { return false }
            pending[message.transactionID] = nil
            failed(request.purpose, because: .refused(code: error.code, reason: error.reason), now: now)
            return true
        }
        guard message.messageClass == .success, isAuthentic(message, for: request) else { return false }
        pending[message.transactionID] = nil
        switch request.purpose {
        case .allocate:
            guard let relayed = address(message, StunAttribute.xorRelayedAddress),
                let mapped = address(message, StunAttribute.xorMappedAddress)
            else {
                failed(.allocate, because: .invalidResponse, now: now)
                return true
            }
            state = .allocated(relayed: relayed, mapped: mapped, refreshAt: refreshTime(of: message, now: now))
            lastFailure = nil
            events.append(.allocated(relayed: relayed, mapped: mapped))
            for ip in permissionOrder { self.request(.permission(ip: ip), now: now, using: &random) }
            for peer in channelOrder {
                if let channel = channels[peer] {
                    self.request(.channel(peer: peer, number: channel.number), now: now, using: &random)
                }
            }
        case .refresh(let lifetime):
            if lifetime > 0, case .allocated(let relayed, let mapped, _) = state {
                state = .allocated(relayed: relayed, mapped: mapped, refreshAt: refreshTime(of: message, now: now))
            }
        case .permission(let ip):
            if permissions[ip] != nil {
                permissions[ip] = now + ProtocolLimits.turnPermissionLifetime - ProtocolLimits.turnRefreshMargin
            }
        case .channel(let peer, let number):
            if channels[peer]?.number == number {
                channels[peer]?.isBound = true
                channels[peer]?.refreshAt = now + ProtocolLimits.turnChannelLifetime - ProtocolLimits.turnRefreshMargin
            }
        }
        return true
    }

    /// Whether a response to `request` may be believed: one to an authenticated request must carry a
    /// MESSAGE-INTEGRITY that verifies under the key (RFC 8489 9.2.5).
    private func isAuthentic(_ message: StunMessage, for request: PendingRequest) -> Bool {
        guard request.authenticated else { return true }
        guard let key, let integrity = message.integrity else { return false }
        return HMACSHA1.isValidAuthenticationCode(integrity.tag, for: integrity.covered, key: key)
    }

    private mutating func learnRealmAndNonce(from message: StunMessage) {
        if let realm = message.attribute(StunAttribute.realm)?.text, realm != self.realm || key == nil {
            self.realm = realm
            key = MD5.hash(Array("\(credentials.username):\(realm):\(credentials.password)".utf8))
        }
        if let nonce = message.attribute(StunAttribute.nonce)?.text { self.nonce = nonce }
    }

    private func address(_ message: StunMessage, _ type: UInt16) -> NetworkAddress? {
        guard let attribute = message.attribute(type),
            let wire = try? attribute.xorAddress(transactionID: message.transactionID)
        else { return nil }
        return NetworkAddress(wire: wire)
    }

    /// When to refresh an allocation the server granted in `message`: ``ProtocolLimits/turnRefreshMargin`` before
    /// its LIFETIME runs out, or at half of it when the lifetime is short.
    private func refreshTime(of message: StunMessage, now: Instant) -> Instant {
        let seconds = (try? message.attribute(StunAttribute.lifetime)?.uint32()) ?? 600
        let lifetime = Duration.seconds(Int64(seconds))
        return now
            + (lifetime > ProtocolLimits.turnRefreshMargin * 2
                ? lifetime - ProtocolLimits.turnRefreshMargin
                : lifetime / 2)
    }

    private mutating func failed(_ purpose: Purpose, because failure: TurnFailure, now: Instant) {
        switch purpose {
        case .allocate, .refresh:
            state = .unallocated(retryAt: now + ProtocolLimits.turnRetryAfterFailure)
            forgetGrants()
            lastFailure = failure
            events.append(.failed(failure))
        case .permission(let ip):
            // Kept, and asked again after the retry interval: forgotten, the next permit() of that IP would ask at once,
            // and a server that refuses it would be asked in a loop.
            if permissions[ip] != nil { permissions[ip] = now + ProtocolLimits.turnRetryAfterFailure }
        case .channel(let peer, let number):
            if channels[peer]?.number == number { forgetChannel(of: peer) }
        }
    }

    /// Forgets which channels and permissions the server granted (the allocation they belonged to is gone); they are
    /// asked for again with the next allocation.
    private mutating func forgetGrants() {
        for peer in channelOrder { channels[peer]?.isBound = false }
        for ip in permissionOrder where permissions[ip] != nil { permissions[ip] = .some(nil) }
    }

    // MARK: - Requests

    private mutating func request(_ purpose: Purpose, now: Instant, using random: inout some RandomNumberGenerator) {
        let transactionID = Self.transactionID(using: &random)
        var attributes: [StunAttribute] = []
        let method: StunMethod
        switch purpose {
        case .allocate:
            method = .allocate
            attributes.append(.requestedTransportUDP)
            attributes.append(
                .uint32(StunAttribute.lifetime, UInt32(ProtocolLimits.turnRequestedLifetime.components.seconds)))
        case .refresh(let lifetime):
            method = .refresh
            attributes.append(.uint32(StunAttribute.lifetime, lifetime))
        case .permission(let ip):
            method = .createPermission
            let wire = try! WireAddress(family: ip.count == 4 ? 4 : 6, bytes: ip, port: 0)
            attributes.append(.xorAddress(StunAttribute.xorPeerAddress, wire, transactionID: transactionID))
        case .channel(let peer, let number):
            method = .channelBind
            attributes.append(.channel(number))
            attributes.append(.xorAddress(StunAttribute.xorPeerAddress, peer.wireAddress, transactionID: transactionID))
        }
        let authenticated = key != nil && realm != nil && nonce != nil
        if authenticated, let realm, let nonce {
            attributes.append(.text(StunAttribute.username, credentials.username))
            attributes.append(.text(StunAttribute.realm, realm))
            attributes.append(.text(StunAttribute.nonce, nonce))
        }
        let message = StunMessage(
            method: method, messageClass: .request, transactionID: transactionID, attributes: attributes)
        let key = self.key
        let bytes = message.encoded(
            integrity: authenticated ? { HMACSHA1.authenticationCode(for: $0, key: key!) } : nil, fingerprint: true)
        pending[transactionID] = PendingRequest(
            purpose: purpose, bytes: bytes, authenticated: authenticated, attempts: 1,
            retransmitAt: now
                + (stream == nil ? ProtocolLimits.turnInitialRetransmission : ProtocolLimits.turnStreamRequestTimeout))
        enqueue(bytes)
        nextKeepaliveAt = now + ProtocolLimits.turnKeepaliveInterval
    }

    private static func transactionID(using random: inout some RandomNumberGenerator) -> [UInt8] {
        (0..<12).map { _ in UInt8.random(in: 0...255, using: &random) }
    }
}
