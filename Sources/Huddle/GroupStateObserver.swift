import NIOConcurrencyHelpers

/// Whether this node can take part in a group session now, and when that changes: Huddle's counterpart of Apple's
/// `GroupStateObserver.isEligibleForGroupSession`, for an app that shows or hides its "share" button.
///
/// A node is eligible while its socket is open and it has a usable network path: bound to one address, an interface
/// that is up and running holds that address (loopback counts, for sessions between processes on one machine); bound
/// to the unspecified address (`0.0.0.0`, `::`), some interface other than loopback is up, running and has an
/// address. It stops being eligible when that interface goes down or loses the address (a cable unplugged, Wi-Fi
/// off, a VPN interface gone) and at ``HuddleNode/shutdown()``, for good. Eligibility says nothing about a session
/// in progress: a session whose path comes back resumes on its own (its connections retry), and one that does not
/// reports its participants `unreachable` as usual.
///
/// An observer made with ``init(node:discoveringNearby:)`` also listens for sessions announced on the local network
/// (``GroupSession/announceNearby(as:validFor:)``), lists them in ``nearbySessions``, and is eligible only while the
/// path is usable *and* at least one is nearby (heard within the last 3 seconds): Apple's "a FaceTime call to share
/// with", for the local network.
///
/// On Linux the node learns of interface changes from the kernel (routing netlink) as they happen, on a thread that
/// sleeps until then; on other platforms it looks every 2 seconds. The watching starts with the node's first
/// observer.
public final class GroupStateObserver: Sendable {
    private let eligibility: Broadcast<Bool>
    private let pathUsable: @Sendable () -> Bool
    /// The sessions heard nearby (`nil`: not discovering).
    private let nearby = NIOLockedValueBox<[NearbySession]?>(nil)
    private let tasks = NIOLockedValueBox<[Task<Void, Never>]>([])

    /// An observer of `node`'s network path.
    public init(node: HuddleNode) {
        let monitor = node.pathMonitor()
        eligibility = monitor.eligibility
        pathUsable = { monitor.eligibility.value }
    }

    /// An observer of `node`'s network path and, with `discoveringNearby`, of the sessions announced on the local
    /// network (see the type's description).
    ///
    /// - Throws: ``HuddleError/localNetwork(_:)`` when the discovery port cannot be opened (only with
    ///   `discoveringNearby`).
    public convenience init(node: HuddleNode, discoveringNearby: Bool) async throws(HuddleError) {
        guard discoveringNearby else {
            self.init(node: node)
            return
        }
        self.init(node: node, nearby: try await NearbySession.watch())
    }

    /// An observer of `node`'s path and of the nearby sessions `lists` yields (``NearbySession/watch()``).
    init(node: HuddleNode, nearby lists: AsyncStream<[NearbySession]>) {
        let monitor = node.pathMonitor()
        pathUsable = { monitor.eligibility.value }
        eligibility = Broadcast(false)
        nearby.withLockedValue { $0 = [] }
        let pathChanges = monitor.eligibility.stream()
        let follow = Task { [weak self] in
            for await sessions in lists {
                guard let self else { return }
                self.publish(nearby: sessions)
            }
        }
        let path = Task { [weak self] in
            for await _ in pathChanges {
                guard let self else { return }
                self.publish()
            }
            // The node shut down.
            self?.tasks.withLockedValue { tasks in tasks.forEach { $0.cancel() } }
            self?.eligibility.finish()
        }
        tasks.withLockedValue { $0 = [follow, path] }
    }

    deinit {
        for task in tasks.withLockedValue({ $0 }) { task.cancel() }
    }

    /// Whether the node can take part in a group session now (see the type's description).
    public var isEligibleForGroupSession: Bool { eligibility.value }

    /// The current eligibility, then each change; ends after the node shuts down (with `false`). A reader that falls
    /// behind sees only the newest value.
    public var eligibilityUpdates: AsyncStream<Bool> { eligibility.stream() }

    /// The sessions announced nearby, heard within the last 3 seconds, by name (at most 64); empty unless made
    /// with `discoveringNearby`.
    public var nearbySessions: [NearbySession] { nearby.withLockedValue { $0 ?? [] } }

    /// Publishes the combined eligibility if it changed (discovering observers only).
    private func publish(nearby sessions: [NearbySession]? = nil) {
        // Under the list's lock, so two changes at once cannot publish in the wrong order.
        nearby.withLockedValue { list in
            if let sessions { list = sessions }
            let eligible = pathUsable() && !(list ?? []).isEmpty
            if eligible != eligibility.value { eligibility.update(eligible) }
        }
    }
}
