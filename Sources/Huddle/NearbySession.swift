import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    @preconcurrency import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A session a member announces on the local network (``GroupSession/announceNearby(as:validFor:)``), as
/// ``browse()`` hears it: join it with ``HuddleNode/join(_:as:onWaitingForApproval:)`` and ``invitation``, no ticket pasted.
///
/// Anyone on the network segment hears the same announcement and can join the same way while it runs: announcing is
/// an open door for the local network (docs/SECURITY.md, "Local network discovery").
public struct NearbySession: Sendable {
    /// The IPv4 multicast group announcements go to (organisation-local scope, sent with TTL 1).
    public static let multicastGroup = NearbyBeacon.group
    /// The UDP port announcements go to.
    public static let port = NearbyBeacon.port

    /// The name the announcing member chose (at most 64 UTF-8 bytes).
    public let name: String
    /// The ticket the announcement carries.
    public let invitation: Invitation
    /// Where the announcement came from.
    public let announcer: NetworkAddress

    /// Listens for announcements on every IPv4 interface that is up and supports multicast, and yields each one
    /// heard (an announcing member repeats its own about once a second, so consumers see the same session again;
    /// expired ones and anything that is not an announcement are skipped). Listening stops when the consumer stops
    /// iterating.
    ///
    /// - Throws: ``HuddleError/localNetwork(_:)`` when the discovery port cannot be opened or no interface can join
    ///   the multicast group.
    public static func browse() async throws(HuddleError) -> AsyncStream<NearbySession> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: NearbySession.self, bufferingPolicy: .bufferingNewest(64))
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                // Several browsers (and processes) on one machine share the port.
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(BeaconReader(continuation: continuation))
                    }
                }
                .bind(host: "0.0.0.0", port: NearbyBeacon.port).get()
        } catch {
            continuation.finish()
            throw .localNetwork(.cannotListen(port: Int(NearbyBeacon.port), reason: "\(error)"))
        }
        var joined = 0
        for interface in multicastInterfaces() {
            // IP_ADD_MEMBERSHIP on each interface's address, as SwiftNIO's joinGroup does for a device: the
            // interface list here is the library's own (NetworkInterface), which SwiftNIO's devices are not.
            let membership = ip_mreq(
                imr_multiaddr: in_addr(s_addr: Self.groupAddress.bigEndian),
                imr_interface: in_addr(s_addr: Self.ipv4Value(interface.address).bigEndian))
            do {
                try await (channel as! any SocketOptionProvider).unsafeSetSocketOption(
                    level: .ip, name: .ip_add_membership, value: membership
                ).get()
                joined += 1
            } catch {
                continue  // another interface may still work
            }
        }
        guard joined > 0 else {
            try? await channel.close()
            continuation.finish()
            throw .localNetwork(.noMulticastInterface)
        }
        continuation.onTermination = { _ in channel.close(promise: nil) }
        return stream
    }

    /// The sessions announced nearby, kept current: yields the list (by name) each time a session is first heard or
    /// stops being heard (no announcement for 3 seconds, or its ticket expired), starting with the first one heard.
    /// At most 64 are listed (a new one replaces the one heard least recently). Listening stops when the consumer
    /// stops iterating.
    ///
    /// - Throws: ``HuddleError/localNetwork(_:)``, as ``browse()``.
    public static func watch() async throws(HuddleError) -> AsyncStream<[NearbySession]> {
        let heard = try await browse()
        let (stream, continuation) = AsyncStream.makeStream(
            of: [NearbySession].self, bufferingPolicy: .bufferingNewest(1))
        let list = NIOLockedValueBox(NearbyList())
        let clock = ContinuousClock()
        let listen = Task {
            for await session in heard {
                let sessions = list.withLockedValue { list in
                    list.heard(session, at: clock.now) ? list.sessions : nil
                }
                if let sessions { continuation.yield(sessions) }
            }
        }
        // Announcements stop without a word: drop what was not heard again for three beacons.
        let expire = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let sessions = list.withLockedValue { list in list.expire(now: clock.now) ? list.sessions : nil }
                if let sessions { continuation.yield(sessions) }
            }
        }
        continuation.onTermination = { _ in
            listen.cancel()
            expire.cancel()
        }
        return stream
    }

    /// The IPv4 addresses of the interfaces that are up, support multicast and are not loopback.
    static func multicastInterfaces() -> [NetworkInterface] {
        NetworkInterface.list().filter { interface in
            interface.has(Int32(IFF_UP) | Int32(IFF_MULTICAST)) && interface.address.family == .ipv4
                && !AdvertisedAddresses.isLoopback(interface.address)
        }
    }

    /// ``NearbyBeacon/group`` as a host-order IPv4 value.
    static let groupAddress: UInt32 = {
        var group = in_addr()
        _ = inet_pton(AF_INET, NearbyBeacon.group, &group)
        return UInt32(bigEndian: group.s_addr)
    }()

    /// The host-order IPv4 value of `address` (an IPv4 address).
    static func ipv4Value(_ address: NetworkAddress) -> UInt32 {
        address.addressBytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// Turns received beacons into ``NearbySession``s.
private final class BeaconReader: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let continuation: AsyncStream<NearbySession>.Continuation

    init(continuation: AsyncStream<NearbySession>.Continuation) {
        self.continuation = continuation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard
            let beacon = NearbyBeacon(decoding: envelope.data.readableBytesView),
            let invitation = try? Invitation(parsing: beacon.ticket), !invitation.isExpired(),
            let source = NetworkAddress(envelope.remoteAddress)
        else { return }
        continuation.yield(NearbySession(name: beacon.name, invitation: invitation, announcer: source))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An ICMP error or a truncated read: nothing to do with listening, which goes on.
    }
}
