import DequeModule
import HuddleWire

extension Connection {
    /// Builds, encrypts and records the next packet into `buffer` (at least ``ConnectionConfiguration/maxDatagramSize``
    /// bytes; packets grow to the path's confirmed size, ``pathDatagramSize``, where the buffer holds it) and returns
    /// its length, or returns `nil` when nothing may be sent now (no confirmed keys, nothing due,
    /// the congestion window full, or the pacer holding the next packet).
    ///
    /// Priority inside a packet: a final ACK and CLOSE; otherwise ACK, MAX_DATA, PING, datagrams, then channel data by
    /// ``ChannelPriority`` (control, messages, bulk), with bulk guaranteed one packet in every
    /// ``ChannelPriority/bulkShare``. Small messages share packets.
    ///
    /// Path probes (PATH_RESPONSE, PATH_CHALLENGE) go first, each on its own route; everything else goes on ``route``,
    /// within the amplification limit while that route is not validated.
    ///
    /// `isPathProbe` marks a Path MTU probe: it must go out as a datagram of its own, never batched with others into
    /// one segmentation-offload write (a GSO write is segmented after the route's MTU checks, so an oversized probe
    /// could pass a link it does not fit, or make the whole write fail).
    public mutating func pollTransmit(
        into buffer: UnsafeMutableRawBufferPointer, now: Instant
    ) -> (route: Route, length: Int, isPathProbe: Bool)? {
        // Only the creation time is read here; the packet is sealed under `current` in place (a local copy of the
        // keypair would retain and release its keys and replay window for every packet).
        guard state != .closed, let created = current?.created, now - created < configuration.rejectAfterTime,
            nextPacketNumber < ProtocolLimits.rejectAfterPackets, sentPackets.canSend
        else { return nil }
        precondition(buffer.count >= configuration.maxDatagramSize, "transmit buffer smaller than the datagram size")
        if state == .established {
            if let probe = pollProbe(into: buffer, now: now) { return (probe.route, probe.length, false) }
            if let length = pollPathMTUProbe(into: buffer, now: now) {
                paths.sent(length)
                return (paths.current, length, true)
            }
        }
        guard !paths.amplificationBlocks(datagramSize: configuration.maxDatagramSize),
            let length = pollPacket(into: buffer, now: now)
        else { return nil }
        paths.sent(length)
        return (paths.current, length, false)
    }

    /// Builds the next packet on ``route``; see ``pollTransmit(into:now:)``.
    private mutating func pollPacket(into buffer: UnsafeMutableRawBufferPointer, now: Instant) -> Int? {
        var datagramSize = min(packetSize, buffer.count)
        // Windows and the pacer's bucket are sized in base datagrams: a window under four large datagrams (early on,
        // or after a collapse) sends base-size ones, so a large path size can never leave a small window unable to
        // send a single packet; nor does a packet wait for a large datagram's room in the window.
        if datagramSize > configuration.maxDatagramSize,
            congestion.congestionWindow < ProtocolLimits.largeDatagramWindowMultiple * datagramSize
                || sentPackets.bytesInFlight + datagramSize > congestion.congestionWindow
        {
            datagramSize = configuration.maxDatagramSize
        }
        let payloadArea = UnsafeMutableRawBufferPointer(
            rebasing: buffer[TransportHeader.encodedLength..<(datagramSize - TransportHeader.tagLength)])
        var writer = ByteWriter(payloadArea)
        var record = SentFrames()
        var ackEliciting = false

        if let close = closeFrame {
            closeFrame = nil
            // A final ACK first: the peer processes it before the CLOSE, so every message this side received is
            // confirmed and not reported undelivered there (it was delivered here).
            if let ack = receivedPackets.makeAckFrame(now: now) {
                var attempt = writer
                if (try? Frame.ack(ack).encode(into: &attempt)) != nil { writer = attempt }
            }
            guard (try? Frame.close(close).encode(into: &writer)) != nil else { return nil }
            if case .draining = state {} else { finish(reason: closeReason, now: now) }
            return seal(
                buffer: buffer, writer: writer, record: SentFrames(), ackEliciting: false, now: now)
        }
        if case .draining = state { return nil }

        let probing = probesOwed > 0
        let hasCredit = peerMaxData > creditUsed
        let somethingToSend = Self.somethingToSend(
            controlPending: probing || pingPending || maxDataPending || addressesOwed, datagrams: datagrams,
            channels: sendChannels.channels, hasCredit: hasCredit)
        var mayElicit =
            somethingToSend && (probing || sentPackets.bytesInFlight + datagramSize <= congestion.congestionWindow)
        // With credit, nothing to send means no data at all; without, only a second look tells.
        if !somethingToSend, sentPackets.bytesInFlight + datagramSize <= congestion.congestionWindow,
            hasCredit
                || !Self.somethingToSend(
                    controlPending: false, datagrams: datagrams, channels: sendChannels.channels, hasCredit: true)
        {
            // Room in the window and no data at all to fill it: rate samples now measure the application, not the
            // path. (A sender held by the peer's flow-control credit is not application-limited: like Linux's
            // receive-window limit, its samples still count.)
            sentPackets.onApplicationLimited()
        }
        pacerReleaseAt = nil
        if mayElicit && !probing,
            let release = pacer.earliestSendTime(
                bytes: datagramSize, bytesPerSecond: congestion.pacingRate(smoothedRTT: rtt.smoothed),
                congestionWindow: congestion.congestionWindow, now: now)
        {
            pacerReleaseAt = release
            mayElicit = false
        }
        let ackDue = receivedPackets.ackDeadline.map { $0 <= now } ?? false
        guard mayElicit || ackDue else { return nil }

        if receivedPackets.isAckPending, let ack = receivedPackets.makeAckFrame(now: now),
            (try? Frame.ack(ack).encode(into: &writer)) != nil
        {
            record.ackLargest = ack.largestAcknowledged
        }
        if mayElicit {
            ackEliciting = fillData(&writer, record: &record)
            if probing && !ackEliciting, (try? Frame.ping.encode(into: &writer)) != nil {
                ackEliciting = true
            }
        }
        guard writer.bytesWritten > 0 else { return nil }
        if !duplicates.isEmpty {
            // Queued again only now, so the copy goes in the next packet, not beside the original in this one.
            for (position, record) in duplicates { sendChannels.channels[position].onLost(record) }
            statistics.fragmentsDuplicated += duplicates.count
            duplicates.removeAll(keepingCapacity: true)
        }
        // The tail of what there is to send (a lone message, the last packet of a burst), or a probe: the peer
        // acknowledges it at once, so its loss is noticed about a round trip later, not after the peer's 25 ms
        // acknowledgement delay as well (PROTOCOL.md §7.8). Packets in the middle of a burst keep the usual
        // acknowledgement pace (every second packet).
        var flags = TransportFlags.honorsImmediateAck
        if configuration.requestsImmediateAck, ackEliciting, probing || !hasSomethingToSend {
            flags.insert(.immediateAck)
        }
        return seal(
            buffer: buffer, writer: writer, record: record, ackEliciting: ackEliciting, flags: flags, now: now)
    }

    /// Whether anything ack-eliciting waits to be sent.
    var hasSomethingToSend: Bool {
        // Everything is passed to a static function: with the checks written here over `self`, callers in mutating
        // methods (pollTransmit, handlePayload) copied the whole connection, retaining each of its buffers, on every
        // packet.
        Self.somethingToSend(
            controlPending: probesOwed > 0 || pingPending || maxDataPending || addressesOwed, datagrams: datagrams,
            channels: sendChannels.channels, hasCredit: sendCredit > 0)
    }

    private static func somethingToSend(
        controlPending: Bool, datagrams: Deque<(ChannelID, [UInt8])>, channels: [SendChannel], hasCredit: Bool
    ) -> Bool {
        controlPending || !datagrams.isEmpty
            || channels.contains { $0.hasRetransmissions || ($0.hasNewData && hasCredit) }
    }

    /// Writes control frames, datagrams and channel data; returns whether anything ack-eliciting was written.
    private mutating func fillData(_ writer: inout ByteWriter, record: inout SentFrames) -> Bool {
        var wrote = observedAddressOwed || candidatesOwed ? fillAddresses(&writer, record: &record) : false
        if maxDataPending, (try? Frame.maxData(advertisedMaxData).encode(into: &writer)) != nil {
            maxDataPending = false
            record.carriesMaxData = true
            wrote = true
        }
        if pingPending, (try? Frame.ping.encode(into: &writer)) != nil {
            pingPending = false
            wrote = true
        }
        while let (channel, bytes) = datagrams.first {
            let fitted: Bool = bytes.withUnsafeBytes { raw in
                (try? Frame.datagram(DatagramFrame(channel: channel, data: raw)).encode(into: &writer)) != nil
            }
            guard fitted else { break }
            datagrams.removeFirst()
            wrote = true
        }

        // The table is in channel order, which is priority order: control, messages, then the bulk channels at the
        // end, from `firstBulk` on. When bulk is owed its share, the bulk channels go first, then the others.
        let channelCount = sendChannels.count
        var firstBulk = channelCount
        while firstBulk > 0, ChannelPriority(channel: sendChannels.ids[firstBulk - 1]) == .bulk { firstBulk -= 1 }
        let bulkWaiting = sendChannels.channels[firstBulk...].contains { $0.hasDataToSend }
        let bulkFirst = bulkWaiting && packetsSinceBulk >= ChannelPriority.bulkShare - 1
        var credit = sendCredit
        let creditBefore = credit
        var sentBulk = false
        // The bulk channels take turns at coming first among themselves (journal chunks and bulk messages alike), one
        // packet each, so none of them waits for another's backlog to finish.
        let bulkCount = channelCount - firstBulk
        let bulkRotation = bulkCount > 1 ? bulkTurn % bulkCount : 0
        for step in 0..<channelCount {
            var position = bulkFirst ? (firstBulk + step) % channelCount : step
            if position >= firstBulk { position = firstBulk + (position - firstBulk + bulkRotation) % bulkCount }
            let duplicated = sendChannels.channels[position].isDuplicated
            while writer.remaining > 8 {
                // Retransmissions are served before new data: a fragment taken while some waited is one, and a copy
                // is never copied again.
                let resending = sendChannels.channels[position].hasRetransmissions
                guard
                    let fragment = sendChannels.channels[position].nextFragment(
                        frameSpace: writer.remaining, newDataCredit: &credit, incompleteMessages: &incompleteMessages)
                else { break }
                let encoded: Bool = sendChannels.channels[position].withFragment(for: fragment) { message in
                    (try? Frame.message(message).encode(into: &writer)) != nil
                }
                precondition(encoded, "a fragment sized for the remaining space did not fit")
                record.append(fragment)
                wrote = true
                if duplicated, !resending, fragment.totalLength > 0,
                    fragment.totalLength <= ProtocolLimits.maxDuplicatedMessageSize
                {
                    duplicates.append((position, fragment))
                }
                if position >= firstBulk { sentBulk = true }
            }
        }
        creditUsed += creditBefore - credit
        if sentBulk {
            packetsSinceBulk = 0
            bulkTurn &+= 1
        } else if bulkWaiting {
            packetsSinceBulk += 1
        }
        return wrote
    }

    mutating func seal(
        buffer: UnsafeMutableRawBufferPointer, writer: ByteWriter, record: SentFrames, ackEliciting: Bool,
        isPathProbe: Bool = false, flags: TransportFlags = .honorsImmediateAck, now: Instant
    ) -> Int? {
        let packetNumber = nextPacketNumber
        nextPacketNumber += 1
        guard
            let length = try? current!.seal(
                buffer, payloadLength: writer.bytesWritten, packetNumber: packetNumber, flags: flags),
            (try? sentPackets.onSent(
                packetNumber, bytes: length, ackEliciting: ackEliciting, inFlight: ackEliciting, record: record,
                isPathProbe: isPathProbe,
                acknowledgedAtOnce: peerHonorsImmediateAck && flags.contains(.immediateAck), now: now)) != nil
        else { return nil }
        if record.ackLargest != nil {
            receivedPackets.onAckSent()
        }
        if ackEliciting {
            // RFC 9000 §10.1: the first ack-eliciting packet after hearing from the peer restarts the idle timer,
            // so a connection that is busy probing a lossy path is not declared idle for the probing itself.
            if !sentAckElicitingSinceReceive {
                sentAckElicitingSinceReceive = true
                idleTimerStartedAt = now
            }
            pacer.onSent(bytes: length)
            if probesOwed > 0 { probesOwed -= 1 }
        }
        packetsUnderCurrentKey += 1
        lastSentAt = now
        statistics.packetsSent += 1
        statistics.bytesSent += length
        return length
    }
}
