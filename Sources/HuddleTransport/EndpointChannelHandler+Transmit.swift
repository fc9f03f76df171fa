import HuddleProtocol
import NIOCore

extension EndpointChannelHandler {
    /// Drains up to `budget` datagrams from the endpoint into the outbound buffer, writes them (same-destination,
    /// equal-size neighbours as one GSO write when enabled) and flushes once.
    ///
    /// Stops while the channel is not writable (``channelWritabilityChanged(context:)`` resumes it). When the budget
    /// runs out a follow-up flush is scheduled as a separate event-loop task, so reads that arrived meanwhile are
    /// processed first.
    func flushTransmits(budget: Int) {
        guard let context, context.channel.isActive else { return }
        // A write can fire writability changes synchronously; the outer call's loop picks up the work.
        guard !isFlushing else { return }
        isFlushing = true
        defer { isFlushing = false }
        var remaining = budget
        // `self.context` changes when a refused write makes SwiftNIO close the channel in the middle of this loop.
        while context.channel.isWritable, context === self.context {
            let limit = min(remaining, settings.maxDatagramsPerFlush)
            let produced = collectTransmits(limit: limit)
            guard produced > 0 else { return }
            writeRuns(context: context)
            remaining -= produced
            // Fewer than asked for: the endpoint has nothing more due now (the timer covers paced packets).
            if produced < limit { return }
            if remaining <= 0 {
                statistics.flushesAtLimit += 1
                scheduleFollowUpFlush(context: context)
                return
            }
        }
    }

    /// Polls up to `limit` datagrams into ``outbound`` and groups them into ``runs``; returns how many.
    private func collectTransmits(limit: Int) -> Int {
        outbound.clear()
        runs.removeAll(keepingCapacity: true)
        let slot = settings.transmitSlotSize
        let now = clock.now
        var produced = 0
        while produced < limit {
            var destination: NetworkAddress?
            var alone = false
            let start = outbound.writerIndex
            outbound.writeWithUnsafeMutableBytes(minimumWritableBytes: slot) { space in
                guard
                    let transmit = endpoint.pollTransmit(
                        into: UnsafeMutableRawBufferPointer(rebasing: space[0..<slot]), now: now)
                else { return 0 }
                destination = transmit.destination
                alone = transmit.isPathProbe
                return transmit.length
            }
            guard let destination else { break }
            let length = outbound.writerIndex - start
            produced += 1
            if settings.segmentationOffload, !alone, !runs.isEmpty,
                runs[runs.count - 1].append(
                    destination: destination, size: length)
            {
                continue
            }
            // A Path MTU probe is a plain write of its own (the kernel checks it against the route's MTU, and the
            // don't-fragment bit applies to it alone), and nothing may join its run.
            runs.append(TransmitRun(destination: destination, start: start, length: length, sealed: alone))
        }
        return produced
    }

    private func writeRuns(context: ChannelHandlerContext) {
        for run in runs {
            let data = outbound.getSlice(at: run.start, length: run.length)!
            let metadata: AddressedEnvelope<ByteBuffer>.Metadata? =
                run.count > 1
                ? .init(ecnState: .transportNotCapable, packetInfo: nil, segmentSize: run.segmentSize) : nil
            let envelope = AddressedEnvelope(
                remoteAddress: addresses.socketAddress(for: run.destination), data: data, metadata: metadata)
            context.write(wrapOutboundOut(envelope), promise: nil)
            statistics.datagramsSent += run.count
            statistics.bytesSent += run.length
            if run.count > 1 { statistics.segmentedWrites += 1 }
        }
        context.flush()
        statistics.flushes += 1
    }

    private func scheduleFollowUpFlush(context: ChannelHandlerContext) {
        guard !followUpFlushScheduled else { return }
        followUpFlushScheduled = true
        context.eventLoop.assumeIsolated().execute {
            self.followUpFlushScheduled = false
            guard !self.isClosed else { return }
            self.flushTransmits(budget: self.settings.maxDatagramsPerFlush)
            self.rearmTimer()
        }
    }
}
