import HuddleProtocol
import NIOCore

#if os(Linux)
    import Glibc
#endif

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
            if settings.segmentationOffload, !segmentationOffloadFailed, !alone, !runs.isEmpty,
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

    /// Sends the collected runs: directly on the socket where possible (see ``DirectDatagramSender``), through
    /// SwiftNIO from the first run the socket's buffer had no room for, or while earlier such writes are pending.
    private func writeRuns(context: ChannelHandlerContext) {
        statistics.flushes += 1
        var queuedFrom = 0
        #if os(Linux)
            if let directSender, channelWritesPending == 0 {
                queuedFrom = sendDirectly(with: directSender)
            }
        #endif
        guard queuedFrom < runs.count else { return }
        for index in queuedFrom..<runs.count {
            let run = runs[index]
            let data = outbound.getSlice(at: run.start, length: run.length)!
            let metadata: AddressedEnvelope<ByteBuffer>.Metadata? =
                run.count > 1
                ? .init(ecnState: .transportNotCapable, packetInfo: nil, segmentSize: run.segmentSize) : nil
            let envelope = AddressedEnvelope(
                remoteAddress: addresses.socketAddress(for: run.destination), data: data, metadata: metadata)
            if index == runs.count - 1 {
                // SwiftNIO completes writes in order: the last one's promise stands for the whole batch.
                channelWritesPending += 1
                let promise = context.eventLoop.makePromise(of: Void.self)
                promise.futureResult.assumeIsolated().whenComplete { _ in self.channelWritesPending -= 1 }
                context.write(wrapOutboundOut(envelope), promise: promise)
            } else {
                context.write(wrapOutboundOut(envelope), promise: nil)
            }
            countSent(run)
        }
        context.flush()
    }

    /// Counts `run` as written to the socket (directly, or handed to SwiftNIO, which writes it or fails the channel).
    private func countSent(_ run: TransmitRun) {
        statistics.datagramsSent += run.count
        statistics.bytesSent += run.length
        if run.count > 1 { statistics.segmentedWrites += 1 }
    }

    #if os(Linux)
        /// Sends runs on the socket until its buffer is full; returns the index of the first run not sent (the
        /// count when all went out or were refused).
        private func sendDirectly(with sender: DirectDatagramSender) -> Int {
            return outbound.withUnsafeReadableBytes { bytes in
                for index in runs.indices {
                    let run = runs[index]
                    let outcome = sender.send(
                        UnsafeRawBufferPointer(rebasing: bytes[run.start..<(run.start + run.length)]),
                        to: addresses.socketAddress(for: run.destination),
                        segmentSize: run.count > 1 ? run.segmentSize : nil)
                    switch outcome {
                    case .sent:
                        countSent(run)
                    case .wouldBlock:
                        statistics.writesQueuedInChannel += 1
                        return index
                    case .refused(let code):
                        // A firewall's EPERM, a path probe's EMSGSIZE, an unreachable network: these datagrams
                        // are lost, as on the path, and the connection's loss recovery deals with them.
                        statistics.writesRefused += 1
                        statistics.datagramsRefused += run.count
                        if code == EIO, run.count > 1 { segmentationOffloadFailed = true }
                    }
                }
                return runs.count
            }
        }
    #endif

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
