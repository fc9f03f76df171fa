import HuddleWire

extension Connection {
    /// The size the next ordinary packet on the current route is built to: the confirmed path size on a validated
    /// direct route, the base size otherwise. Probe-timeout packets use the base size too, so a path that stopped
    /// carrying large datagrams still gets packets through, and their acknowledgements declare the large ones lost
    /// (which is how ``PathMTUDiscovery`` notices the black hole).
    var packetSize: Int {
        guard probesOwed == 0, !paths.current.isRelayed, paths.currentValidated else {
            return configuration.maxDatagramSize
        }
        return pathMTU.current
    }

    /// Builds the next Path MTU probe into `buffer` and returns its length, if one is due: a PING padded to the size
    /// being tried, alone in its packet, on a validated direct route, never while probe-timeout packets are owed or a
    /// CLOSE waits. The size is at most a ``ProtocolLimits/largeDatagramWindowMultiple``th of the congestion window
    /// (so a probe never takes most of a young window) and must fit in what the window has left. Nothing in it is
    /// retransmitted; its loss is no congestion signal (``SentPacketTracker/Packet/isPathProbe``).
    mutating func pollPathMTUProbe(into buffer: UnsafeMutableRawBufferPointer, now: Instant) -> Int? {
        guard pathMTU.isEnabled, probesOwed == 0, closeFrame == nil, !paths.current.isRelayed,
            paths.currentValidated,
            let size = pathMTU.probeDue(
                now: now,
                largest: min(
                    buffer.count, congestion.congestionWindow / ProtocolLimits.largeDatagramWindowMultiple)),
            sentPackets.bytesInFlight + size <= congestion.congestionWindow
        else { return nil }
        var writer = ByteWriter(
            UnsafeMutableRawBufferPointer(
                rebasing: buffer[TransportHeader.encodedLength..<(size - TransportHeader.tagLength)]))
        guard (try? Frame.ping.encode(into: &writer)) != nil,
            (try? Frame.encodePadding(count: writer.remaining, into: &writer)) != nil
        else { return nil }
        let packetNumber = nextPacketNumber
        guard
            let length = seal(
                buffer: buffer, writer: writer, record: SentFrames(), ackEliciting: true, isPathProbe: true, now: now)
        else { return nil }
        pathMTU.onProbeSent(packetNumber: packetNumber, size: size)
        statistics.pathMTUProbesSent += 1
        return length
    }
}
