import ArgumentParser
import Huddle

/// `--[no-]path-mtu-discovery`, taken by every command that starts a node.
struct PathMTUOption: ParsableArguments {
    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Search each direct path for the largest datagram it carries (Path MTU discovery, up to 8972 bytes).",
            discussion: "With --no-path-mtu-discovery every datagram stays at 1200 bytes."))
    var pathMTUDiscovery = true

    /// Applies the choice to a node's configuration.
    func apply(to configuration: inout HuddleNode.Configuration) {
        configuration.transport.pathMTUDiscovery = pathMTUDiscovery
    }
}
