/// Why the local network cannot be used to announce or find sessions: the payload of
/// ``HuddleError/localNetwork(_:)``.
public enum LocalNetworkFailure: Sendable, Hashable, CustomStringConvertible {
    /// The node listens on `address`, from where beacons reach no other machine (loopback, or an IPv6 address: the
    /// beacons are IPv4 multicast). Listen on `0.0.0.0` or an IPv4 interface address to announce.
    case listensWhereBeaconsCannotReach(address: String)
    /// No network interface that is up supports multicast.
    case noMulticastInterface
    /// No interface could send to the beacon group `group`.
    case cannotSend(group: String)
    /// The discovery port could not be opened; `reason` is the system's wording.
    case cannotListen(port: Int, reason: String)

    public var description: String {
        switch self {
        case .listensWhereBeaconsCannotReach(let address):
            "this node listens on \(address), where beacons cannot reach other machines: listen on 0.0.0.0 or an "
                + "IPv4 interface address to announce"
        case .noMulticastInterface: "no interface that is up supports multicast"
        case .cannotSend(let group): "no interface could send to \(group)"
        case .cannotListen(let port, let reason): "cannot listen on UDP port \(port): \(reason)"
        }
    }
}
