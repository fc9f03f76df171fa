import CoreMetrics
import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A device on the Huddle mesh: an identity, one UDP socket, and the session it takes part in.
///
/// ```swift
/// let node = try await HuddleNode.start(.init(identity: identity, name: "ada"))
/// let session = try await node.activate(DrawTogether(canvasName: "sketch"))
/// try await session.join()
/// let ticket = try await session.makeInvitation().ticket   // hand this to a friend
/// ```
///
/// A node takes part in one session at a time (start another node, on another port, for a second one).
public final class HuddleNode: Sendable {
    /// How to start a node.
    public struct Configuration: Sendable {
        /// Who this node is.
        public var identity: Identity
        /// The display name other participants see (at most 64 UTF-8 bytes).
        public var name: String
        /// The address to bind (`127.0.0.1`, `0.0.0.0`, `::1`, ...): ``transport``'s `host`, the one place it is kept.
        public var host: String {
            get { transport.host }
            set { transport.host = newValue }
        }
        /// The UDP port; 0 picks a free one: ``transport``'s `port`, the one place it is kept.
        public var port: Int {
            get { transport.port }
            set { transport.port = newValue }
        }
        /// The addresses other members reach this node at, best first (tickets name each member at its first
        /// address; member records carry them all), at most ``HuddleNode/maxAdvertisedAddresses`` (8; more are
        /// ignored). A port of 0 stands for the bound port. Empty (the default): the bound address, or, when bound to
        /// the unspecified address (`0.0.0.0`, `::`), the machine's non-loopback interface addresses of that family
        /// and then loopback.
        public var advertisedAddresses: [NetworkAddress] = []
        /// The first of ``advertisedAddresses``; setting it replaces them with this one address.
        public var advertisedAddress: NetworkAddress? {
            get { advertisedAddresses.first }
            set { advertisedAddresses = newValue.map { [$0] } ?? [] }
        }
        /// Relays (UDP addresses of `huddle relay` servers) the node registers with, at most
        /// ``HuddleNode/maxRelays``: members it cannot reach directly (both behind NATs) are reached through them
        /// until hole punching finds a direct path, and tickets it writes name them so joiners use them too. The
        /// relays only forward sealed packets; they never hold session keys.
        public var relays: [NetworkAddress] = []
        /// TURN servers (RFC 8656, over UDP or TCP, long-term credentials) the node allocates on, at most
        /// ``HuddleNode/maxTurnServers``: what coturn and hosted TURN services run. A TCP server listed with a UDP
        /// one is its fallback for networks that block UDP: it stands by while a UDP allocation works, starts when
        /// none is granted within 2 s (`ProtocolLimits.turnStreamFallbackDelay`), and stands by again (its connections
        /// moving to the UDP allocation) once UDP works. Peers reach the node at each
        /// allocation's relayed address, and a first handshake also goes out through each allocation. When
        /// ``advertisedAddresses`` is left empty, ``HuddleNode/start(_:)`` waits up to
        /// ``HuddleNode/turnAllocationWait`` for the allocations and advertises their relayed addresses first (so a
        /// ticket, which names a member at its first address, reaches this node through TURN even behind a
        /// symmetric NAT; hole punching then moves peers that can reach it directly to a direct path). A TURN server
        /// sees which addresses this node talks to and how much, never what (every packet is sealed end to end).
        public var turnServers: [TurnServer] = []
        /// STUN servers (RFC 8489 Binding; coturn and public STUN servers answer) the node asks, from its own socket,
        /// where they see it, at most ``HuddleNode/maxStunServers``: their answers are reflexive addresses, offered to
        /// peers for hole punching. When ``advertisedAddresses`` is left empty, ``HuddleNode/start(_:)`` waits up
        /// to ``HuddleNode/stunWait`` for them and advertises them after any TURN relayed address and before the
        /// interface addresses, so a joiner elsewhere tries the public address first (behind a NAT that keeps one
        /// public port for every destination and lets anyone in, that reaches this node without any relay).
        public var stunServers: [NetworkAddress] = []
        /// Whether the tickets this node writes carry ``turnServers`` with their credentials (off by default). A
        /// joiner then allocates on them too, so it gets in from a network that blocks UDP, or from behind a
        /// symmetric NAT, without a TURN server of its own. Whoever holds such a ticket can use those credentials on
        /// those servers (their quota, not the session) until they change: prefer time-limited credentials (coturn's
        /// `use-auth-secret`) for servers shared this way.
        public var shareTurnServers = false
        /// Whether the node asks its home router to forward a public port to its socket (PCP, else NAT-PMP, and
        /// UPnP-IGD; on by default). Only a node bound to the unspecified address (`0.0.0.0`) or to its address toward the router
        /// asks, and only a router reached from a private address (10/8, 172.16/12, 192.168/16, 100.64/10): that is
        /// the NAT. The mapped address reaches this node from anywhere, so peers behind any NAT, symmetric ones
        /// included, get a direct path: it is offered to peers first and, when ``advertisedAddresses`` is left
        /// empty, advertised first (``HuddleNode/start(_:)`` waits up to ``HuddleNode/portMappingWait`` for it). The
        /// mapping is renewed while the node runs and deleted at ``HuddleNode/shutdown()``. Gateways are read from
        /// Linux's routing table; elsewhere nothing is asked.
        public var portMapping = true
        /// Whether the node's sessions relay for their members (on by default): two members that cannot reach each
        /// other directly (both behind symmetric NATs, say) but both reach this node exchange their sealed packets
        /// through it, at most 2 MiB/s each (`ProtocolLimits.memberRelayBytesPerSecond`), and this node registers
        /// with up to two members it reaches directly to be reached the same way. Only the session's members may use
        /// it; it sees what a relay sees (who talks to whom, when, how much), never content. Off, it does neither,
        /// and other members pass it over.
        public var relaysForMembers = true
        /// Where the node logs.
        public var logger: Logger
        /// Socket-level settings (offloads, batch sizes).
        public var transport: TransportConfiguration
        /// The congestion controller of every connection: `.bbr` (the default,
        /// delivery-rate based: keeps its rate under random loss), `.cubic` (RFC 9438) or `.newReno` (RFC 9002).
        public var congestionControl: CongestionControl = .bbr
        /// How long a connection may hear nothing from its peer before it sends a keepalive that the peer answers at
        /// once; a participant silent for twice this is reported ``ParticipantChange/unresponsive(_:)``. 1 s (the
        /// default) costs about one small datagram each way per second per participant (some 55 bytes a second
        /// each way, measured in a 64-member session) and reports a crashed participant within 3 s. A large
        /// session that can wait longer to notice saves idle traffic with a longer interval, within
        /// ``HuddleNode/keepaliveIntervals``.
        public var keepaliveInterval: Duration = .seconds(1)
        /// Where the node keeps journal attachments, one subdirectory per session (deleted when the node leaves
        /// the session). `nil` (the default): a new temporary directory, deleted at ``HuddleNode/shutdown()``.
        /// Give a lasting directory to resume interrupted downloads after a crash: a node that rejoins the same
        /// session over the same directory fetches only the chunks it has not verified.
        public var dataDirectory: URL?
        /// Where the node's metrics go (the table in README, "Metrics", and in `NodeMetrics`' documentation). `nil`
        /// (the default): the backend bootstrapped with `MetricsSystem.bootstrap(_:)`; when none is, the node
        /// counts nothing for metrics and runs no sampling timer.
        public var metricsFactory: (any MetricsFactory)?
        /// Labels added to every metric of this node, e.g. `[("node", "alice")]` when one process runs several
        /// nodes. Empty by default: keep their values few (never one per peer).
        public var metricsDimensions: [(String, String)] = []
        /// How often the node publishes its counters and levels to the metrics backend (message counts, delivery
        /// failures and join times are recorded as they happen). ``HuddleNode/updateMetrics()`` publishes at once,
        /// e.g. before answering a scrape. Default 5 s.
        public var metricsInterval: Duration = .seconds(5)
        /// The protocol revision this node's handshakes name (their Noise prologue): ``HuddleNode/protocolVersion``.
        /// Tests set another to play a node of another revision (one that a node of this revision refuses, and that
        /// refuses it, with ``JoinFailure/incompatibleProtocol(ours:theirs:)``).
        @_spi(Testing) public var protocolVersion: String = HuddleNode.protocolVersion

        /// A configuration; the defaults bind an ephemeral port on 127.0.0.1.
        public init(
            identity: Identity, name: String, host: String = "127.0.0.1", port: Int = 0,
            logger: Logger = Logger(label: "huddle")
        ) {
            self.identity = identity
            self.name = name
            self.logger = logger
            self.transport = TransportConfiguration(host: host, port: port)
        }
    }

    /// The congestion controllers a node can use (docs/PROTOCOL.md §7.5).
    public typealias CongestionControl = ConnectionConfiguration.CongestionControl

    /// The most STUN servers a node asks (``Configuration/stunServers``; more are ignored).
    public static let maxStunServers = ProtocolLimits.maxStunServers
    /// How long ``start(_:)`` waits for the STUN servers' answers before advertising what it has.
    public static let stunWait: Duration = .seconds(1)

    /// How long ``start(_:)`` waits for the home router's port mapping (``Configuration/portMapping``): a router on
    /// the LAN answers within milliseconds, and one that does not answer at all should not hold a node up longer. A
    /// mapping granted later is still offered to peers for hole punching.
    public static let portMappingWait: Duration = .milliseconds(500)

    /// The most TURN servers a node allocates on (``Configuration/turnServers``; more are ignored).
    public static let maxTurnServers = ProtocolLimits.maxTurnServers
    /// How long ``start(_:)`` waits for TURN allocations before advertising what it has (a TURN server answers in a
    /// round trip or two; one that does not answer in this time is left to retry in the background). It covers a
    /// TCP fallback's start (2 s, `ProtocolLimits.turnStreamFallbackDelay`) and its allocation.
    public static let turnAllocationWait: Duration = .seconds(3)

    /// The most relays a node registers with (``Configuration/relays``; more are ignored).
    public static let maxRelays = ProtocolLimits.maxRelays
    /// The most addresses a node advertises (a member record carries at most this many).
    public static let maxAdvertisedAddresses = ProtocolLimits.maxMemberAddresses

    /// Where the node's socket is bound.
    public let localAddress: NetworkAddress
    /// The addresses other members reach this node at, best first (see
    /// ``Configuration/advertisedAddresses``).
    public let advertisedAddresses: [NetworkAddress]
    /// The address a ticket names this node at: the first of ``advertisedAddresses``.
    public var advertisedAddress: NetworkAddress { advertisedAddresses[0] }
    /// This node's identity fingerprint (the ``Participant/id`` others see).
    public let fingerprint: String
    /// The node's network thread as a task executor. A task that reads messages and answers them can prefer it:
    ///
    /// ```swift
    /// Task(executorPreference: node.taskExecutor) {
    ///     for await (move, context) in messenger.messages(of: Move.self) {
    ///         try await messenger.send(reply(to: move), to: .only([context.source]))
    ///     }
    /// }
    /// ```
    ///
    /// Its messages are then handed to it, and its sends reach the socket, on the thread that reads the socket, with
    /// no thread switch on the way (a round trip on loopback takes about half as long). Keep blocking work (file
    /// or network calls that wait, long computations) out of such a task: it delays every peer's traffic. Without a
    /// preference, tasks run on Swift's cooperative pool as usual.
    public var taskExecutor: some TaskExecutor { driver.taskExecutor }
    let engine: SessionEngine
    let driver: UDPEndpointDriver
    let identity: Identity
    let name: String
    /// The data directory to delete at shutdown (a temporary one this node created).
    private let temporaryDataDirectory: URL?
    /// The UPnP-IGD mappers of the node's home gateways, released at shutdown.
    let upnpMappers: [UPnPPortMapper]
    private let observers = NIOLockedValueBox<[Int: AsyncStream<any Sendable>.Continuation]>([:])
    private let nextObserver = NIOLockedValueBox(0)
    /// Watches the network path for ``GroupStateObserver``s, from the first one on; `closed` once the node shut down.
    private let pathWatch = NIOLockedValueBox<(monitor: NetworkPathMonitor?, closed: Bool)>((nil, false))
    /// Publishes the metrics every ``Configuration/metricsInterval`` while a backend is bootstrapped.
    private let metricsTask = NIOLockedValueBox<Task<Void, Never>?>(nil)

    private init(
        driver: UDPEndpointDriver, engine: SessionEngine, identity: Identity, name: String,
        advertisedAddresses: [NetworkAddress], temporaryDataDirectory: URL?, upnpMappers: [UPnPPortMapper]
    ) {
        self.upnpMappers = upnpMappers
        self.temporaryDataDirectory = temporaryDataDirectory
        self.driver = driver
        self.engine = engine
        self.identity = identity
        self.name = name
        self.localAddress = driver.localAddress
        self.advertisedAddresses = advertisedAddresses
        self.fingerprint = identity.publicIdentity.fingerprint
    }

    /// The keepalive intervals a node accepts (``Configuration/keepaliveInterval``): 100 ms to 5 s. Below, the
    /// keepalives themselves become the traffic; above, the responder's keepalive (after one and a half intervals)
    /// and the unresponsive report (after two) would come too near the 15 s idle timeout they are meant to precede.
    public static let keepaliveIntervals: ClosedRange<Duration> = .milliseconds(100) ... .seconds(5)

    /// Binds the socket and starts the node.
    ///
    /// - Throws: ``HuddleError/transport(_:)`` when the address cannot be bound,
    ///   ``HuddleError/keepaliveIntervalOutOfRange(_:)`` when the keepalive interval is outside ``keepaliveIntervals``,
    ///   ``HuddleError/turnCredentialsTooLong(server:limit:)`` when TURN servers are shared in tickets and one's
    ///   credentials do not fit in a ticket.
    public static func start(_ configuration: Configuration) async throws(HuddleError) -> HuddleNode {
        let transport = configuration.transport
        var endpointConfiguration = EndpointConfiguration(
            identity: configuration.identity, prologue: Array(configuration.protocolVersion.utf8),
            wallClockAtOrigin: TAI64N(seconds: 0, nanoseconds: 0))
        endpointConfiguration.connection.congestionControl = configuration.congestionControl
        let keepalive = configuration.keepaliveInterval
        guard keepaliveIntervals.contains(keepalive) else { throw .keepaliveIntervalOutOfRange(keepalive) }
        let limit = Invitation.maxTurnCredentialBytes
        if configuration.shareTurnServers,
            let server = configuration.turnServers.prefix(maxTurnServers).first(where: {
                $0.credentials.username.utf8.count > limit || $0.credentials.password.utf8.count > limit
            })
        {
            throw .turnCredentialsTooLong(server: server.address, limit: limit)
        }
        endpointConfiguration.connection.keepaliveInterval = keepalive
        endpointConfiguration.connection.unresponsiveAfter = keepalive * 2
        endpointConfiguration.connection.duplicatedChannels = [SessionEngine.messengerDuplicatedChannel]
        endpointConfiguration.relays = configuration.relays
        endpointConfiguration.turnServers = Array(configuration.turnServers.prefix(maxTurnServers))
        endpointConfiguration.stunServers = Array(configuration.stunServers.prefix(maxStunServers))
        let driver: UDPEndpointDriver
        do {
            driver = try await UDPEndpointDriver.bind(
                configuration: endpointConfiguration, transport: transport,
                group: MultiThreadedEventLoopGroup.singleton, logger: configuration.logger)
        } catch {
            throw .transport(error)
        }
        let bound = driver.localAddress
        var advertised =
            configuration.advertisedAddresses.isEmpty
            ? AdvertisedAddresses.choose(bound: bound, interfaces: AdvertisedAddresses.interfaceAddresses())
            : AdvertisedAddresses.resolving(configuration.advertisedAddresses, port: bound.port)
        if configuration.advertisedAddresses.isEmpty, !configuration.stunServers.isEmpty {
            let reflexive = await awaitStunAnswers(driver)
            advertised = Array(
                (reflexive + advertised.filter { !reflexive.contains($0) }).prefix(maxAdvertisedAddresses))
        }
        if configuration.advertisedAddresses.isEmpty, !configuration.turnServers.isEmpty {
            let relayed = await awaitTurnAllocations(driver).compactMap(\.relayedAddress)
            advertised = Array((relayed + advertised.filter { !relayed.contains($0) }).prefix(maxAdvertisedAddresses))
        }
        let portMappings = PortMappingReport()
        var upnpMappers: [UPnPPortMapper] = []
        if configuration.portMapping {
            // A node given its addresses does not wait: its mapping becomes a candidate whenever it comes.
            let started = await startPortMapping(
                driver: driver, bound: bound, report: portMappings, waits: configuration.advertisedAddresses.isEmpty)
            upnpMappers = started.upnp
            if configuration.advertisedAddresses.isEmpty {
                advertised = Array(
                    (started.mapped + advertised.filter { !started.mapped.contains($0) }).prefix(maxAdvertisedAddresses)
                )
            }
        }
        // The interface addresses are this node's direct candidates for hole punching (its reflexive addresses come
        // from relays and peers).
        let candidates = advertised
        try? await driver.perform { endpoint, _ in endpoint.setLocalAddresses(candidates) }
        let name = String(
            decoding: Array(configuration.name.utf8.prefix(ProtocolLimits.maxMemberNameBytes)), as: UTF8.self)
        let temporary =
            configuration.dataDirectory == nil
            ? FileManager.default.temporaryDirectory.appending(path: "huddle-\(UUID().uuidString.lowercased())") : nil
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        let metrics =
            factory is NOOPMetricsHandler
            ? nil : NodeMetrics(factory: factory, dimensions: configuration.metricsDimensions)
        let engine = SessionEngine(
            driver: driver, identity: configuration.identity, name: name, advertisedAddresses: advertised,
            sharedTurnServers: configuration.shareTurnServers ? endpointConfiguration.turnServers : [],
            choosesAddresses: configuration.advertisedAddresses.isEmpty,
            relaysForMembers: configuration.relaysForMembers, portMappings: portMappings,
            dataRoot: configuration.dataDirectory ?? temporary!, logger: configuration.logger, metrics: metrics)
        await engine.start()
        // On the loop, so no newer update from a `turnChanged` event can be overwritten by this read.
        let turnUpdates = engine.turnUpdates
        try? await driver.perform { endpoint, _ in
            turnUpdates.update(TurnAllocation.all(of: endpoint))
            portMappings.endpointChanged(endpoint.portMappings)
        }
        let node = HuddleNode(
            driver: driver, engine: engine, identity: configuration.identity, name: name,
            advertisedAddresses: advertised, temporaryDataDirectory: temporary, upnpMappers: upnpMappers)
        if metrics != nil {
            let interval = configuration.metricsInterval
            node.metricsTask.withLockedValue {
                $0 = Task { [weak node] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        guard let node else { return }
                        await node.updateMetrics()
                    }
                }
            }
        }
        return node
    }

    /// This library's release (semantic versioning; CHANGELOG.md lists what each one changed). `huddle --version`
    /// prints it with ``protocolVersion``.
    public static let version = "0.3.0"

    /// The protocol this node speaks, `huddle/1`: the Noise prologue of every handshake, so a node of another
    /// protocol version never completes one with it (docs/PROTOCOL.md, "Version").
    public static let protocolVersion = "huddle/1"

    /// The Noise prologue of ``protocolVersion``: handshakes with other protocols or versions fail (and are refused).
    static let prologue = Array(protocolVersion.utf8)

    /// How long ``join(_:as:onWaitingForApproval:)`` waits for a member the invitation names to answer before it fails with
    /// ``HuddleError/joinTimedOut(_:)``.
    public static var joinTimeout: Duration { SessionEngine.timing.joinTimeout }

    /// How long an ask-to-join request waits for a member's answer (two minutes); a joiner told to wait has its join
    /// timeout extended by this much.
    public static let joinApprovalTimeout = ProtocolLimits.joinApprovalTimeout

    var localParticipant: Participant {
        Participant(
            MemberRecord(identity: identity.publicIdentity, name: name, addresses: advertisedAddresses, epoch: 0))
    }

    /// A new session for `activity`, with this node as its first member and creator; it is
    /// ``GroupSessionState/waiting`` until ``GroupSession/join()``. `removalPolicy` says who may remove participants
    /// (``GroupSession/remove(_:)``); the creator signs it and every member enforces it.
    public func activate<Activity: GroupActivity>(
        _ activity: Activity, removalPolicy: RemovalPolicy = .creatorOnly
    ) async throws(HuddleError) -> GroupSession<Activity> {
        var random = SystemRandomGenerator()
        // The session's id derives from its creator's key and a nonce, which binds the creator to it (the charter).
        let charter = SessionCharter(
            signingKey: identity.signingKey, nonce: random.bytes(count: SessionCharter.nonceLength),
            policy: removalPolicy.charterPolicy)
        let session = charter.session
        let secret = SecureBytes(count: 32, using: &random)
        let local = MemberRecord(
            identity: identity.publicIdentity, name: name, addresses: advertisedAddresses, epoch: 0)
        let membership = SessionMembership(starting: session, local: local, sessionSecret: secret, charter: charter)
        let context = SessionContext(
            id: session, activityIdentifier: Activity.activityIdentifier, local: localParticipant,
            plan: .start(membership), activity: try ActivityCoding.encode(activity))
        let groupSession = GroupSession(context: context, engine: engine, activity: activity)
        announce(groupSession)
        return groupSession
    }

    /// Joins the session a ticket names: contacts the members it lists and returns once one of them let this
    /// node in (the session is then ``GroupSessionState/joined``). No network traffic happens for an expired
    /// ticket.
    ///
    /// With an ask-to-join ticket the member reached holds the request until a participant answers it:
    /// `onWaitingForApproval` is called when that wait starts, and the join timeout grows by two minutes, the time
    /// members have to answer. A denial fails the join with ``JoinFailure/denied``, no answer with
    /// ``JoinFailure/unanswered``.
    ///
    /// - Throws: ``HuddleError/invitationExpired(_:)``, ``HuddleError/joinTimedOut(_:)`` (30 s),
    ///   ``HuddleError/joinFailed(_:)`` (``JoinFailure/denied`` among others),
    ///   ``HuddleError/activityMismatch(expected:found:)``,
    ///   ``HuddleError/alreadyInSession``, and at once, before any network traffic,
    ///   ``HuddleError/invitationNamesOnlyThisNode(fingerprint:)`` when every member the ticket names is this node's own identity
    ///   (a node cannot let itself in: two processes sharing one identity file do this).
    public func join<Activity: GroupActivity>(
        _ invitation: Invitation, as type: Activity.Type = Activity.self,
        onWaitingForApproval: (@Sendable () -> Void)? = nil
    ) async throws(HuddleError) -> GroupSession<Activity> {
        guard !invitation.isExpired() else { throw .invitationExpired(invitation.expiresAt) }
        // The membership core skips members with the local key, so such a ticket would leave nobody to contact and
        // the join would wait out its timeout in silence.
        let ownKey = identity.publicIdentity.agreementKey
        guard invitation.members.contains(where: { $0.staticKey != ownKey }) else {
            throw .invitationNamesOnlyThisNode(fingerprint: fingerprint)
        }
        let context = SessionContext(
            id: invitation.session, activityIdentifier: Activity.activityIdentifier, local: localParticipant,
            plan: .join(invitation), activity: [], onWaitingForApproval: onWaitingForApproval)
        try await engine.begin(context)
        let activity = try ActivityCoding.decode(context.activity.value, as: Activity.self)
        let groupSession = GroupSession(context: context, engine: engine, activity: activity)
        announce(groupSession)
        return groupSession
    }

    /// Every session this node creates or joins from now on, as Apple's `Activity.sessions()`: configure
    /// messengers for each as it arrives.
    public func sessions<Activity: GroupActivity>(of type: Activity.Type) -> AsyncStream<GroupSession<Activity>> {
        let (stream, continuation) = AsyncStream<GroupSession<Activity>>.makeStream()
        let (erased, erasedContinuation) = AsyncStream<any Sendable>.makeStream()
        let id = nextObserver.withLockedValue { value in
            defer { value += 1 }
            return value
        }
        observers.withLockedValue { $0[id] = erasedContinuation }
        let task = Task {
            for await session in erased {
                if let session = session as? GroupSession<Activity> { continuation.yield(session) }
            }
            continuation.finish()
        }
        continuation.onTermination = { [observers] _ in
            task.cancel()
            _ = observers.withLockedValue { $0.removeValue(forKey: id) }?.finish()
        }
        return stream
    }

    private func announce(_ session: some Sendable) {
        for observer in observers.withLockedValue({ Array($0.values) }) { observer.yield(session) }
    }

    /// Transport counters (datagrams, batches, drops), for diagnostics.
    ///
    /// - Throws: ``HuddleError/transport(_:)`` once the node is shut down.
    public func statistics() async throws(HuddleError) -> TransportStatistics {
        do {
            return try await driver.statistics()
        } catch {
            throw .transport(error)
        }
    }

    /// Publishes the node's counters and levels to the metrics backend now (``Configuration/metricsFactory``); call
    /// it before answering a scrape so it shows the current figures. Does nothing without a backend or after
    /// ``shutdown()``.
    public func updateMetrics() async {
        guard let metrics = engine.metrics, let (sample, participants) = try? await engine.metricsSample() else {
            return
        }
        metrics.publish(sample, participants: participants)
    }

    /// The node's one path monitor, started on first use (stopped already when the node has shut down).
    func pathMonitor() -> NetworkPathMonitor {
        let localAddress = self.localAddress
        return pathWatch.withLockedValue { watch in
            if let monitor = watch.monitor { return monitor }
            let monitor = NetworkPathMonitor(bound: localAddress)
            if watch.closed { monitor.stop() }
            watch.monitor = monitor
            return monitor
        }
    }

    /// Each TURN server of ``Configuration/turnServers`` (and those a ticket brought when joining) and where its
    /// allocation stands now.
    public func turnAllocations() async -> [TurnAllocation] {
        await Self.turnAllocations(driver)
    }

    /// Each relay this node registers with, and whether the registration is confirmed now.
    public func relayRegistrations() async -> [RelayRegistration] {
        (try? await driver.perform { endpoint, now in
            endpoint.relays(now: now).map { RelayRegistration(relay: $0.address, isRegistered: $0.registered) }
        }) ?? []
    }

    /// Where relays, TURN and STUN servers and peers have seen this node, most recent last (at most
    /// `ProtocolLimits.maxReflexiveAddresses`).
    public func reflexiveAddresses() async -> [NetworkAddress] {
        (try? await driver.perform { endpoint, _ in endpoint.reflexiveAddresses }) ?? []
    }

    /// Where every TURN allocation stands (as ``turnAllocations()`` says), then the list again after each change:
    /// an allocation granted, lost or failed, a TCP fallback starting or standing by again, servers a ticket brought
    /// when joining. An observer that falls behind sees only the newest list; the stream ends at ``shutdown()``.
    public func turnAllocationChanges() -> AsyncStream<[TurnAllocation]> {
        engine.turnUpdates.stream()
    }

    static func turnAllocations(_ driver: UDPEndpointDriver) async -> [TurnAllocation] {
        (try? await driver.perform { endpoint, _ in TurnAllocation.all(of: endpoint) }) ?? []
    }

    /// The allocations once every server granted one or failed, or as they stand after ``turnAllocationWait``. A
    /// TCP fallback standing by counts as settled, and so does a UDP server that has not answered once a TCP one
    /// granted an allocation (UDP is blocked). Checked every 10 ms: this runs once, at start, before the engine that
    /// reports TURN changes exists (the allocation itself is driven by the endpoint's own timers, not by this wait;
    /// a joiner waits for a ticket's servers on ``turnAllocationChanges()`` instead).
    static func awaitTurnAllocations(_ driver: UDPEndpointDriver) async -> [TurnAllocation] {
        let deadline = ContinuousClock.now + turnAllocationWait
        var allocations = await turnAllocations(driver)
        while TurnAllocation.areUnsettled(allocations), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            allocations = await turnAllocations(driver)
        }
        return allocations
    }

    /// Where the STUN servers see this node, once each answered or after ``stunWait``, each address once. Checked
    /// every 10 ms, once, at start (the requests themselves run on the endpoint's timers).
    static func awaitStunAnswers(_ driver: UDPEndpointDriver) async -> [NetworkAddress] {
        let deadline = ContinuousClock.now + stunWait
        var answers: [NetworkAddress?] = []
        repeat {
            answers = (try? await driver.perform { endpoint, _ in endpoint.stunAnswers.map(\.mapped) }) ?? []
            if answers.allSatisfy({ $0 != nil }) { break }
            try? await Task.sleep(for: .milliseconds(10))
        } while ContinuousClock.now < deadline
        var unique: [NetworkAddress] = []
        for case let address? in answers where !unique.contains(address) { unique.append(address) }
        return unique
    }

    /// Leaves the current session (if any), closes every connection and the socket. Idempotent.
    public func shutdown() async {
        metricsTask.withLockedValue { $0?.cancel() }
        await updateMetrics()
        await engine.shutdown()
        for mapper in upnpMappers { await mapper.release() }
        await driver.close()
        engine.turnUpdates.finish()
        engine.portMappings.finish()
        let monitor = pathWatch.withLockedValue { watch in
            watch.closed = true
            return watch.monitor
        }
        monitor?.stop()
        if let temporaryDataDirectory { try? FileManager.default.removeItem(at: temporaryDataDirectory) }
        for observer in observers.withLockedValue({ Array($0.values) }) { observer.finish() }
    }
}
