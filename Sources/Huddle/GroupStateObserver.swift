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
/// On Linux the node learns of interface changes from the kernel (routing netlink) as they happen, on a thread that
/// sleeps until then; on other platforms it looks every 2 seconds. The watching starts with the node's first
/// observer.
public final class GroupStateObserver: Sendable {
    private let monitor: NetworkPathMonitor

    /// An observer of `node`'s eligibility.
    public init(node: HuddleNode) {
        monitor = node.pathMonitor()
    }

    /// Whether the node can take part in a group session now (see the type's description).
    public var isEligibleForGroupSession: Bool { monitor.eligibility.value }

    /// The current eligibility, then each change; ends after the node shuts down (with `false`). A reader that falls
    /// behind sees only the newest value.
    public var eligibilityUpdates: AsyncStream<Bool> { monitor.eligibility.stream() }
}
