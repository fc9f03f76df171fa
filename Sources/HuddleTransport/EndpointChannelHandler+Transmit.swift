import HuddleProtocol
import NIOCore

#if os(Linux)
    import Glibc
#endif

extension EndpointChannelHandler {
    /// Drains up to `budget` datagrams from the endpoint into the ``TransmitBatch``, writes them (same-destination,
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
        // Packets on a TURN route over TCP left the endpoint into its stream queues: they go out after the datagrams.
        defer {
            isFlushing = false
            serviceTurnStreams()
        }
        var remaining = budget
        // `self.context` changes when a refused write makes SwiftNIO close the channel in the middle of this loop.
        while context.channel.isWritable, context === self.context {
            let limit = min(remaining, settings.maxDatagramsPerFlush)
            let produced = transmits.collect(
                from: &endpoint, limit: limit, slotSize: settings.transmitSlotSize,
                segmenting: settings.segmentationOffload && !segmentationOffloadFailed, now: clock.now)
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
        let runs = transmits.runs
        guard queuedFrom < runs.count else { return }
        for index in queuedFrom..<runs.count {
            let run = runs[index]
            let data = transmits.buffer.getSlice(at: run.start, length: run.length)!
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
            let runs = transmits.runs
            return transmits.buffer.withUnsafeReadableBytes { bytes in
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
