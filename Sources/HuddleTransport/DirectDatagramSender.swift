import NIOCore

#if os(Linux)
    import Glibc

    /// Sends datagrams with `sendmsg` on the endpoint's socket itself instead of through SwiftNIO's write path.
    ///
    /// Why: SwiftNIO closes a datagram channel when a send fails with anything but EMSGSIZE or EHOSTUNREACH. A local
    /// firewall that drops a datagram makes `sendmsg` fail with EPERM, so each drop tore the socket down for every
    /// peer, lost what the kernel had queued in both directions and bound a new socket (``ChannelReplacement``):
    /// 5 % firewall drop on a veth pair kept 31 % of lossless bulk goodput. A refused send concerns the datagrams of
    /// that one write; here it is counted and the protocol's loss recovery resends what matters. Sending directly
    /// also skips SwiftNIO's per-write envelope and pending-write bookkeeping.
    ///
    /// The descriptor belongs to the SwiftNIO channel (which closes it); the handler drops its sender when the
    /// channel goes inactive, before the number could be reused.
    struct DirectDatagramSender {
        /// What one write came to.
        enum Outcome: Equatable {
            /// The kernel took the datagrams.
            case sent
            /// The socket's send buffer is full (EAGAIN): the write must wait for writability.
            case wouldBlock
            /// The kernel refused the write with this errno; its datagrams are lost.
            case refused(errno: CInt)
        }

        /// The socket (owned by the channel).
        let descriptor: CInt

        /// `SOL_UDP`: the protocol level of the segmentation option.
        private static let udpLevel = CInt(IPPROTO_UDP)
        /// `UDP_SEGMENT` from `linux/udp.h`: the segment size of a segmentation-offload write.
        private static let udpSegment: CInt = 103
        /// `CMSG_LEN(2)` and `CMSG_SPACE(2)` on LP64 Linux: a 16-byte `cmsghdr` and a UInt16 padded to 8 bytes.
        private static let segmentControlLength = MemoryLayout<cmsghdr>.size + 2
        private static let segmentControlSpace = MemoryLayout<cmsghdr>.size + 8

        /// Writes `bytes` to `address` as one datagram, or with `segmentSize` as consecutive datagrams of that size
        /// (the last may be shorter) in one segmentation-offload write.
        func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress, segmentSize: Int?) -> Outcome {
            var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
            return withUnsafeTemporaryAllocation(byteCount: Self.segmentControlSpace, alignment: 8) { control in
                address.withSockAddr { name, nameLength in
                    withUnsafeMutablePointer(to: &iov) { iovPointer in
                        var message = msghdr()
                        message.msg_name = UnsafeMutableRawPointer(mutating: name)
                        message.msg_namelen = socklen_t(nameLength)
                        message.msg_iov = iovPointer
                        message.msg_iovlen = 1
                        if let segmentSize {
                            control.initializeMemory(as: UInt8.self, repeating: 0)
                            let header = control.baseAddress!.assumingMemoryBound(to: cmsghdr.self)
                            header.pointee.cmsg_len = Self.segmentControlLength
                            header.pointee.cmsg_level = Self.udpLevel
                            header.pointee.cmsg_type = Self.udpSegment
                            control.storeBytes(
                                of: UInt16(segmentSize), toByteOffset: MemoryLayout<cmsghdr>.size, as: UInt16.self)
                            message.msg_control = control.baseAddress
                            message.msg_controllen = Self.segmentControlSpace
                        }
                        while true {
                            if Glibc.sendmsg(descriptor, &message, 0) >= 0 { return .sent }
                            let code = errno
                            switch code {
                            case EINTR: continue
                            case EAGAIN, EWOULDBLOCK: return .wouldBlock
                            default: return .refused(errno: code)
                            }
                        }
                    }
                }
            }
        }

        /// A non-blocking UDP socket bound to `address`, for SwiftNIO's `DatagramBootstrap.withBoundSocket(_:)`, which
        /// takes ownership. Without SO_REUSEADDR: a port another socket holds is refused (EADDRINUSE), not shared.
        static func boundSocket(to address: SocketAddress) throws -> CInt {
            let family: CInt
            switch address {
            case .v4: family = AF_INET
            case .v6: family = AF_INET6
            default: throw IOError(errnoCode: EAFNOSUPPORT, reason: "socket")
            }
            let descriptor = Glibc.socket(family, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
            let bound = address.withSockAddr { name, length in Glibc.bind(descriptor, name, socklen_t(length)) }
            guard bound == 0 else {
                let code = errno
                close(descriptor)
                throw IOError(errnoCode: code, reason: "bind")
            }
            return descriptor
        }
    }
#endif
