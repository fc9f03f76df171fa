import Foundation
import HuddleProtocol
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// A session being announced on the local network (``GroupSession/announceNearby(as:validFor:)``): a beacon with
/// its name and a ticket, multicast about once a second on each interface the node can use, until ``stop()``, the
/// ticket's expiry, or the end of this node's part in the session.
public final class NearbyAnnouncement: Sendable {
    /// How often the beacon goes out.
    public static let interval = Duration.seconds(1)

    /// The name the session is announced under.
    public let name: String
    /// The ticket the beacons carry: whoever hears one can join with it until it expires or the announcement stops.
    public let invitation: Invitation
    private let task: Task<Void, Never>
    private let closeInvitation: @Sendable () async -> Void

    init(
        name: String, invitation: Invitation, channels: [any Channel], isLive: @escaping @Sendable () -> Bool,
        closeInvitation: @escaping @Sendable () async -> Void
    ) throws(HuddleError) {
        self.name = name
        self.invitation = invitation
        self.closeInvitation = closeInvitation
        let beacon = NearbyBeacon(name: name, ticket: invitation.ticket).encoded()
        let group: SocketAddress
        do {
            group = try SocketAddress(ipAddress: NearbyBeacon.group, port: NearbyBeacon.port)
        } catch {
            throw .localNetwork(.cannotSend(group: NearbyBeacon.group))
        }
        task = Task {
            while !Task.isCancelled, isLive(), !invitation.isExpired() {
                for channel in channels {
                    let envelope = AddressedEnvelope(remoteAddress: group, data: ByteBuffer(bytes: beacon))
                    // A send that fails (the interface went down) is retried with the next beacon.
                    try? await channel.writeAndFlush(envelope).get()
                }
                try? await Task.sleep(for: Self.interval)
            }
            for channel in channels { try? await channel.close() }
        }
    }

    /// Stops the beacons and closes the announced invitation on this node. Other members close it when it expires
    /// (they took it as any invitation a member opens), so keep announcements short: a node that heard a beacon can
    /// still join through them until then.
    public func stop() async {
        task.cancel()
        await task.value
        await closeInvitation()
    }

    /// Sockets that send beacons: bound to `bound` when the node listens on one IPv4 address, else one per IPv4
    /// interface that is up and supports multicast, each sending out of its own interface with TTL 1.
    static func openChannels(bound: NetworkAddress) async throws(HuddleError) -> [any Channel] {
        let boundHost =
            bound.family == .ipv4 ? bound.addressBytes.map(String.init).joined(separator: ".") : "\(bound)"
        let unspecified = bound.addressBytes.allSatisfy { $0 == 0 }
        let hosts: [String]
        if unspecified {
            hosts = NearbySession.multicastInterfaces().map {
                $0.address.addressBytes.map(String.init).joined(separator: ".")
            }
        } else if bound.family == .ipv4, !AdvertisedAddresses.isLoopback(bound) {
            hosts = [boundHost]
        } else {
            throw .localNetwork(.listensWhereBeaconsCannotReach(address: boundHost))
        }
        guard !hosts.isEmpty else { throw .localNetwork(.noMulticastInterface) }
        var channels: [any Channel] = []
        for host in hosts {
            do {
                let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: host, port: 0).get()
                let provider = channel as! any SocketOptionProvider
                var interface = in_addr()
                _ = inet_pton(AF_INET, host, &interface)
                try await provider.setIPMulticastIF(interface).get()
                try await provider.setIPMulticastTTL(1).get()
                // Also heard by browsers on this machine (two processes on one laptop).
                try await provider.setIPMulticastLoop(1).get()
                channels.append(channel)
            } catch {
                continue
            }
        }
        guard !channels.isEmpty else {
            throw .localNetwork(.cannotSend(group: NearbyBeacon.group))
        }
        return channels
    }
}
