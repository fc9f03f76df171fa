import DequeModule
import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleTransport
import HuddleWire
import Logging
import NIOConcurrencyHelpers

/// A message on its way to ``Messenger`` subscriptions.
struct ReceivedMessage: Sendable {
    var envelope: MessageEnvelope
    var source: Participant
    var reliable: Bool
}

/// Runs a node's session: drives the ``SessionCore`` on the transport's event loop, turns its events into the
/// public API's state (``SessionContext``), and routes members' messages to ``Messenger`` subscriptions.
///
/// The ``SessionCore`` lives in a lock-protected box that is only touched inside ``UDPEndpointDriver/perform(_:)``,
/// that is on the event loop, together with the endpoint it drives.
actor SessionEngine {
    /// How long joining waits for a WELCOME.
    static let joinTimeout: Duration = .seconds(30)
    /// How long leaving waits for the departure announcement to be acknowledged before closing connections.
    static let leaveFlushTimeout: Duration = .seconds(2)
    /// Messages a subscription buffers before the engine stops reading (and the transport stops acknowledging).
    static let subscriptionCapacity = 1024
    /// Messages kept for subscriptions that do not exist yet (a late joiner's catch-up arrives before the app
    /// subscribes); beyond it they are dropped, counted and logged.
    static let maxUnclaimedMessages = 1024
    /// The channel messengers' reliable messages and unreliable datagrams travel on.
    static let messengerChannel = ChannelID(16)

    struct Subscription {
        var reliable: Bool
        var kind: MessageEnvelope.Kind
        var typeName: String
        var queue: BoundedAsyncQueue<ReceivedMessage>

        func matches(_ message: ReceivedMessage) -> Bool {
            message.reliable == reliable && message.envelope.kind == kind && message.envelope.typeName == typeName
        }
    }

    let driver: UDPEndpointDriver
    let identity: Identity
    let name: String
    let advertisedAddress: NetworkAddress
    let logger: Logger
    private let core = NIOLockedValueBox<SessionCore?>(nil)
    private var context: SessionContext?
    private var joinWaiters: [CheckedContinuation<Void, any Error>] = []
    private var subscriptions: [Int: Subscription] = [:]
    private var nextSubscription = 0
    private var unclaimed = Deque<ReceivedMessage>()
    private var eventTask: Task<Void, Never>?
    private var housekeepingTask: Task<Void, Never>?
    /// Messages dropped because nobody subscribed to their type and the unclaimed buffer was full.
    private(set) var unclaimedDropped = 0
    /// Messages that were not valid messenger envelopes.
    private(set) var undecodableDropped = 0

    init(
        driver: UDPEndpointDriver, identity: Identity, name: String, advertisedAddress: NetworkAddress,
        logger: Logger
    ) {
        self.driver = driver
        self.identity = identity
        self.name = name
        self.advertisedAddress = advertisedAddress
        self.logger = logger
    }

    /// Starts reading the transport's events.
    func start() {
        guard eventTask == nil else { return }
        let events = driver.events
        eventTask = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
        }
    }

    /// The local member record.
    var localRecord: MemberRecord {
        MemberRecord(identity: identity.publicIdentity, name: name, addresses: [advertisedAddress], epoch: 0)
    }

    // MARK: - Session life

    /// Starts or joins the session `context` describes; returns once it is joined.
    func begin(_ context: SessionContext) async throws {
        if let current = self.context, !current.isInvalidated { throw HuddleError.alreadyInSession }
        self.context = context
        unclaimed.removeAll()
        switch context.plan {
        case .start(let membership):
            let activity = context.activity.value
            try await install(membership) { core, endpoint, now in
                core.update(&endpoint, now: now) { $0.setActivity(activity) }
            }
            context.state.update(.joined)
        case .join(let invitation):
            guard !invitation.isExpired() else { throw HuddleError.invitationExpired(invitation.expiresAt) }
            let membership = try SessionMembership(
                joining: invitation.session, local: localRecord, invitationSecret: invitation.secret,
                members: invitation.members.map { (staticKey: $0.staticKey, addresses: [$0.address]) })
            try await install(membership) { _, _, _ in }
            try await waitForJoin(context)
        }
        startHousekeeping()
    }

    private func install(
        _ membership: SessionMembership,
        then body: @escaping @Sendable (inout SessionCore, inout Endpoint, Instant) -> Void
    ) async throws {
        let core = self.core
        let events = try await driver.perform { endpoint, now in
            core.withLockedValue { box -> [SessionEvent] in
                var session = SessionCore(membership: membership)
                session.flush(&endpoint, now: now)
                body(&session, &endpoint, now)
                var events: [SessionEvent] = []
                while let event = session.pollEvent() { events.append(event) }
                box = session
                return events
            }
        }
        for event in events { await dispatch(event) }
    }

    private func waitForJoin(_ context: SessionContext) async throws {
        if case .joined = context.state.value { return }
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: Self.joinTimeout)
            await self?.joinTimedOut(context)
        }
        defer { timeout.cancel() }
        try await withCheckedThrowingContinuation { continuation in
            joinWaiters.append(continuation)
        }
    }

    private func joinTimedOut(_ context: SessionContext) async {
        guard self.context === context, case .waiting = context.state.value else { return }
        failJoin(HuddleError.joinTimedOut(Self.joinTimeout))
        context.invalidate(.joinFailed("no member answered within \(Self.joinTimeout)"))
        await teardown(closing: true)
    }

    private func failJoin(_ error: HuddleError) {
        let waiters = joinWaiters
        joinWaiters.removeAll()
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// Announces departure, waits (briefly) for it to be acknowledged, then closes every connection.
    func leave() async {
        guard let context, !context.isInvalidated else { return }
        _ = try? await performOnCore { core, endpoint, now in core.update(&endpoint, now: now) { $0.leave() } }
        await waitForAcknowledgements()
        failJoin(.invalidated(.left))
        context.invalidate(.left)
        await teardown(closing: true)
    }

    /// Ends the session for everyone.
    func end() async throws {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        _ = try? await performOnCore { core, endpoint, now in core.update(&endpoint, now: now) { $0.end() } }
        await waitForAcknowledgements()
        context.invalidate(.ended(by: nil))
        await teardown(closing: true)
    }

    /// Shuts the engine down (the node is closing).
    func shutdown() async {
        if let context, !context.isInvalidated {
            await leave()
            failJoin(.invalidated(.nodeShutDown))
            context.invalidate(.nodeShutDown)
        }
        eventTask?.cancel()
        housekeepingTask?.cancel()
        for subscription in subscriptions.values { subscription.queue.finish() }
        subscriptions.removeAll()
    }

    private func waitForAcknowledgements() async {
        let clock = ContinuousClock()
        let deadline = clock.now + Self.leaveFlushTimeout
        while clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            let settled =
                (try? await driver.perform { endpoint, _ in
                    endpoint.connectionIDs.allSatisfy { id in
                        // A peer that already closed (it received our announcement and left) owes no ACK.
                        guard let connection = endpoint.connection(id), connection.isOpen else { return true }
                        return connection.bytesInFlight == 0
                    }
                }) ?? true
            if settled { return }
        }
    }

    /// Forgets the session: closes its connections (when asked), removes its peers and admissions.
    private func teardown(closing: Bool) async {
        housekeepingTask?.cancel()
        housekeepingTask = nil
        let core = self.core
        _ = try? await driver.perform { endpoint, now in
            core.withLockedValue { box in
                guard let session = box else { return }
                for member in session.membership.roster where member.staticKey != endpoint.staticKey {
                    endpoint.removePeer(member.staticKey, now: now)
                }
                for grant in session.membership.openInvitations { endpoint.removeAdmission(grant.id) }
                if closing {
                    for id in endpoint.connectionIDs {
                        endpoint.close(id, code: .noError, reason: "left the session", now: now)
                    }
                }
                box = nil
            }
        }
        for subscription in subscriptions.values { subscription.queue.finish() }
        subscriptions.removeAll()
        unclaimed.removeAll()
    }

    private func startHousekeeping() {
        housekeepingTask?.cancel()
        housekeepingTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await self?.expireInvitations()
            }
        }
    }

    private func expireInvitations() async {
        let now = UInt64(max(0, Date().timeIntervalSince1970))
        _ = try? await performOnCore { core, endpoint, instant in
            core.update(&endpoint, now: instant) { membership in
                for id in membership.expiredInvitations(at: now) { membership.closeInvitation(id) }
            }
        }
    }

    // MARK: - Local operations

    /// Publishes a new activity payload to every member.
    func setActivity(_ payload: [UInt8]) async throws {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        try await performOnCore { core, endpoint, now in core.update(&endpoint, now: now) { $0.setActivity(payload) } }
    }

    /// Opens an invitation valid for `duration` and returns its ticket, naming the current members.
    func makeInvitation(validFor duration: Duration) async throws -> Invitation {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        var random = SystemRandomGenerator()
        let secret = SecureBytes(count: 32, using: &random)
        let expiresAt = Date().addingTimeInterval(Double(duration.components.seconds))
        let grant = try InvitationGrant(secret: secret, expiresAt: UInt64(expiresAt.timeIntervalSince1970))
        let hints = try await performOnCore { core, endpoint, now in
            core.update(&endpoint, now: now) { membership in
                membership.openInvitation(grant)
                return membership.ticketHints(limit: Invitation.maxMembers)
            }
        }
        let members = hints.compactMap { hint in
            hint.addresses.first.map { Invitation.Member(staticKey: hint.staticKey, address: $0) }
        }
        return Invitation(
            session: context.id, secret: secret, expiresAt: expiresAt,
            inviterSigningKey: identity.publicIdentity.signingKey, inviterName: name, members: members)
    }

    /// Sends an encoded envelope to `recipients` (`nil`: every other active participant). Reliable sends suspend
    /// while a recipient's window is full.
    func send(_ bytes: [UInt8], reliable: Bool, to recipients: Set<Participant>?) async throws {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        let others = context.participants.value.subtracting([context.local])
        if let recipients {
            for recipient in recipients where !others.contains(recipient) && recipient != context.local {
                throw HuddleError.notAParticipant(recipient)
            }
        }
        let keys = (recipients.map { $0.intersection(others) } ?? others).map(\.staticKey)
        let connections = try await driver.perform { endpoint, _ in
            keys.compactMap { endpoint.connectionID(for: $0) }
        }
        for connection in connections {
            do {
                if reliable {
                    try await driver.send(bytes, on: Self.messengerChannel, to: connection)
                } else {
                    try await driver.sendDatagram(bytes, on: Self.messengerChannel, to: connection)
                }
            } catch TransportError.connectionClosed {
                // The participant left while we were sending; its departure is reported on its own.
                continue
            } catch let error as TransportError {
                throw HuddleError.transport(error)
            } catch let error as ProtocolError {
                if case .messageTooLarge(let size, let limit) = error {
                    throw HuddleError.datagramTooLarge(size: size, limit: limit)
                }
                throw HuddleError.transport(.protocolError(error))
            }
        }
    }

    /// Connection figures for every other active participant.
    func peerStatistics() async throws -> [PeerStatistics] {
        guard let context, case .joined = context.state.value else { throw HuddleError.notJoined }
        let others = Array(context.participants.value.subtracting([context.local]))
        let keys = others.map(\.staticKey)
        let figures = try await driver.perform { endpoint, _ in
            keys.map { key -> (Duration, Int, Int)? in
                guard let id = endpoint.connectionID(for: key), let connection = endpoint.connection(id) else {
                    return nil
                }
                return (connection.rtt.smoothed, connection.statistics.packetsSent, connection.statistics.packetsLost)
            }
        }
        return zip(others, figures).compactMap { participant, figure in
            figure.map {
                PeerStatistics(participant: participant, smoothedRTT: $0.0, packetsSent: $0.1, packetsLost: $0.2)
            }
        }
    }

    // MARK: - Subscriptions

    /// A new subscription; messages that arrived before it and match are handed over first.
    func subscribe(
        reliable: Bool, kind: MessageEnvelope.Kind, typeName: String
    ) async -> (
        Int, BoundedAsyncQueue<ReceivedMessage>
    ) {
        let queue = BoundedAsyncQueue<ReceivedMessage>(capacity: Self.subscriptionCapacity)
        let subscription = Subscription(reliable: reliable, kind: kind, typeName: typeName, queue: queue)
        let id = nextSubscription
        nextSubscription += 1
        if let context, context.isInvalidated {
            queue.finish()
            return (id, queue)
        }
        subscriptions[id] = subscription
        var kept = Deque<ReceivedMessage>()
        while let message = unclaimed.popFirst() {
            if subscription.matches(message) {
                await queue.push(message)
            } else {
                kept.append(message)
            }
        }
        unclaimed = kept
        return (id, queue)
    }

    /// Ends a subscription (its consumer went away).
    func unsubscribe(_ id: Int) {
        subscriptions.removeValue(forKey: id)?.queue.finish()
    }

    // MARK: - Events

    private func handle(_ event: EndpointEvent) async {
        let core = self.core
        let events: [SessionEvent]
        do {
            events = try await driver.perform { endpoint, now in
                core.withLockedValue { box -> [SessionEvent] in
                    guard box != nil else { return [] }
                    box!.handle(event, endpoint: &endpoint, now: now)
                    var events: [SessionEvent] = []
                    while let event = box!.pollEvent() { events.append(event) }
                    return events
                }
            }
        } catch {
            return
        }
        for event in events { await dispatch(event) }
    }

    private func performOnCore<Result: Sendable>(
        _ body: @escaping @Sendable (inout SessionCore, inout Endpoint, Instant) throws -> Result
    ) async throws -> Result {
        let core = self.core
        let (result, events) = try await driver.perform { endpoint, now in
            try core.withLockedValue { box -> (Result, [SessionEvent]) in
                guard box != nil else { throw HuddleError.notJoined }
                let result = try body(&box!, &endpoint, now)
                var events: [SessionEvent] = []
                while let event = box!.pollEvent() { events.append(event) }
                return (result, events)
            }
        }
        for event in events { await dispatch(event) }
        return result
    }

    private func dispatch(_ event: SessionEvent) async {
        guard let context, !context.isInvalidated else { return }
        switch event {
        case .joined:
            let found = ActivityCoding.identifier(of: context.activity.value) ?? "nothing"
            guard found == context.activityIdentifier else {
                let error = HuddleError.activityMismatch(expected: context.activityIdentifier, found: found)
                failJoin(error)
                context.invalidate(.joinFailed(error.description))
                await teardown(closing: true)
                return
            }
            context.state.update(.joined)
            let waiters = joinWaiters
            joinWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        case .participantJoined(let member):
            var participants = context.participants.value
            participants.update(with: Participant(member))
            context.participants.update(participants)
            context.changes.yield(.joined(Participant(member)))
            logger.debug("participant joined", metadata: ["participant": "\(Participant(member))"])
        case .participantLeft(let member, let reason):
            var participants = context.participants.value
            participants.remove(Participant(member))
            context.participants.update(participants)
            context.changes.yield(.left(Participant(member), reason: reason == .left ? .left : .unreachable))
            logger.debug(
                "participant left", metadata: ["participant": "\(Participant(member))", "reason": "\(reason)"])
        case .activityChanged(let record):
            context.activity.update(record.payload)
        case .ended(let by):
            failJoin(.invalidated(.ended(by: by.map(Participant.init))))
            context.invalidate(.ended(by: by.map(Participant.init)))
            await teardown(closing: true)
        case .joinFailed(let reason):
            failJoin(.joinFailed(reason))
            context.invalidate(.joinFailed(reason))
            await teardown(closing: true)
        case .message(let from, let channel, let bytes):
            guard channel == Self.messengerChannel else { return }
            await route(bytes, from: from, reliable: true)
        case .datagram(let from, let channel, let bytes):
            guard channel == Self.messengerChannel else { return }
            await route(bytes, from: from, reliable: false)
        case .delivered:
            break
        case .undelivered(_, let messages):
            logger.info("connection closed with unacknowledged messages", metadata: ["count": "\(messages.count)"])
        }
    }

    private func route(_ bytes: [UInt8], from member: MemberRecord, reliable: Bool) async {
        guard let envelope = MessageEnvelope(decoding: bytes) else {
            undecodableDropped += 1
            return
        }
        let message = ReceivedMessage(envelope: envelope, source: Participant(member), reliable: reliable)
        let targets = subscriptions.filter { $0.value.matches(message) }
        guard !targets.isEmpty else {
            if unclaimed.count < Self.maxUnclaimedMessages {
                unclaimed.append(message)
            } else {
                unclaimedDropped += 1
                logger.warning(
                    "dropped a message nobody subscribed to",
                    metadata: ["type": "\(envelope.typeName)", "dropped": "\(unclaimedDropped)"])
            }
            return
        }
        for (id, target) in targets where !(await target.queue.push(message)) {
            subscriptions[id] = nil
        }
    }
}
