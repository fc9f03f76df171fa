import Foundation
import HuddleProtocol
import NIOConcurrencyHelpers

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Whether a node bound to one address has a usable network path, kept current as interfaces go up and down: the
/// state behind ``GroupStateObserver``.
///
/// On Linux it listens to the kernel's routing netlink (link and address changes) on a thread of its own that sleeps
/// in `poll` until something changes, so an idle node never wakes for it; elsewhere it checks every
/// ``fallbackInterval``. Stopping it (at ``HuddleNode/shutdown()``) publishes `false`, since the socket is gone.
final class NetworkPathMonitor: Sendable {
    /// How often platforms without netlink look at the interfaces again.
    static let fallbackInterval = Duration.seconds(2)

    /// The address the node's socket is bound to.
    let bound: NetworkAddress
    /// The current eligibility and its changes.
    let eligibility: Broadcast<Bool>
    private let stopper = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    /// A monitor for a node bound to `bound`, already watching.
    init(bound: NetworkAddress) {
        self.bound = bound
        eligibility = Broadcast(Self.isUsable(bound: bound, interfaces: Self.runningInterfaceAddresses()))
        let stop = watch { [weak self] in self?.recheck() }
        stopper.withLockedValue { $0 = stop }
    }

    /// Stops watching and publishes `false` (the node's socket is closed). Idempotent.
    func stop() {
        let stop = stopper.withLockedValue { stopper in
            defer { stopper = nil }
            return stopper
        }
        guard let stop else { return }
        stop()
        if eligibility.value { eligibility.update(false) }
        eligibility.finish()
    }

    /// Looks at the interfaces again and publishes a change.
    private func recheck() {
        let usable = Self.isUsable(bound: bound, interfaces: Self.runningInterfaceAddresses())
        guard stopper.withLockedValue({ $0 != nil }), usable != eligibility.value else { return }
        eligibility.update(usable)
    }

    /// Whether a socket bound to `bound` can reach other machines given the addresses of the interfaces that are up
    /// and running: bound to one address, an interface must hold it (loopback counts: peers on this machine); bound to
    /// the unspecified address, some interface other than loopback must have an address (of either family for `::`,
    /// which is dual-stack; IPv4 for `0.0.0.0`).
    static func isUsable(bound: NetworkAddress, interfaces: [NetworkAddress]) -> Bool {
        let unspecified = bound.addressBytes.allSatisfy { $0 == 0 }
        guard unspecified else {
            return interfaces.contains { $0.family == bound.family && $0.addressBytes == bound.addressBytes }
        }
        return interfaces.contains { address in
            !AdvertisedAddresses.isLoopback(address) && (bound.family == .ipv6 || address.family == .ipv4)
        }
    }

    /// The addresses of interfaces that are up and running (`IFF_UP` and `IFF_RUNNING`: a veth whose peer is down, or
    /// a cable unplugged, is up but not running).
    static func runningInterfaceAddresses() -> [NetworkAddress] {
        AdvertisedAddresses.interfaceAddresses(requiring: Int32(IFF_UP) | Int32(IFF_RUNNING))
    }

    #if os(Linux)
        /// The routing netlink groups of link changes and IPv4 and IPv6 address changes (`RTMGRP_LINK`,
        /// `RTMGRP_IPV4_IFADDR`, `RTMGRP_IPV6_IFADDR` of `<linux/rtnetlink.h>`, which Glibc's module does not import).
        private static let netlinkGroups: UInt32 = 0x1 | 0x10 | 0x100

        /// `struct sockaddr_nl`: family, padding, port id (0: the kernel assigns one), multicast groups.
        private struct NetlinkAddress {
            var family = UInt16(AF_NETLINK)
            var padding: UInt16 = 0
            var portID: UInt32 = 0
            var groups: UInt32
        }

        /// Calls `changed` on a thread of its own after every batch of link or address changes; returns what stops
        /// it. Falls back to polling when the netlink socket cannot be opened (a sandbox without it).
        private func watch(_ changed: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
            let socket = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var wake: [Int32] = [-1, -1]
            guard socket >= 0, pipe(&wake) == 0 else {
                if socket >= 0 { close(socket) }
                return poll(changed)
            }
            var address = NetlinkAddress(groups: Self.netlinkGroups)
            let bound = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<NetlinkAddress>.size))
                }
            }
            guard bound == 0 else {
                for fd in [socket, wake[0], wake[1]] { close(fd) }
                return poll(changed)
            }
            let (wakeRead, wakeWrite) = (wake[0], wake[1])
            let finished = ConditionLock(value: false)
            let thread = Thread {
                defer {
                    finished.lock()
                    finished.unlock(withValue: true)
                }
                var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                while true {
                    var descriptors = [
                        pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                        pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                    ]
                    let ready = Glibc.poll(&descriptors, 2, -1)
                    if ready < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    if descriptors[1].revents != 0 { return }
                    guard descriptors[0].revents != 0 else { continue }
                    // Drain the whole burst (an interface going down sends several messages), then look once. A
                    // receive queue that overflowed (ENOBUFS) lost messages, but looking again covers those too.
                    while buffer.withUnsafeMutableBytes({ recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) })
                        > 0
                    {}
                    changed()
                }
            }
            thread.name = "huddle-path-monitor"
            thread.start()
            return {
                var byte: UInt8 = 1
                _ = write(wakeWrite, &byte, 1)
                finished.lock(whenValue: true)
                finished.unlock()
                for fd in [socket, wakeRead, wakeWrite] { close(fd) }
            }
        }
    #else
        private func watch(_ changed: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
            poll(changed)
        }
    #endif

    /// Calls `changed` every ``fallbackInterval`` until stopped.
    private func poll(_ changed: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.fallbackInterval)
                changed()
            }
        }
        return { task.cancel() }
    }
}
