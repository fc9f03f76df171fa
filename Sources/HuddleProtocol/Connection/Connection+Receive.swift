import HuddleWire

extension Connection {
    /// Processes the decrypted frames of an authenticated packet that arrived on `route` as a datagram of
    /// `datagramLength` bytes. A protocol violation closes the connection with CLOSE(protocolViolation); nothing else
    /// is affected.
    mutating func handlePayload(
        _ payload: UnsafeRawBufferPointer, packetNumber: UInt64, flags: TransportFlags = [], from route: Route,
        datagramLength: Int, now: Instant
    ) {
        guard state != .closed else { return }
        noteServiced(now: now)
        lastReceivedAt = now
        idleTimerStartedAt = now
        sentAckElicitingSinceReceive = false
        silenceCountedFrom = nil
        if reportedUnresponsive {
            reportedUnresponsive = false
            events.append(.responsive)
        }
        statistics.packetsReceived += 1
        statistics.bytesReceived += payload.count + TransportHeader.minimumPacketLength
        if case .draining = state { return }

        var decoder = FrameDecoder(payload)
        var ackEliciting = false
        var probing = true
        let newest = receivedPackets.largestReceived.map { packetNumber > $0 } ?? true
        do {
            while let frame = try decoder.next() {
                switch frame {
                case .pathChallenge, .pathResponse: break
                default: probing = false
                }
                switch frame {
                case .ack(let ack):
                    try handleAck(ack, now: now)
                case .message(let fragment):
                    ackEliciting = true
                    try handleFragment(fragment)
                case .datagram(let datagram):
                    ackEliciting = true
                    events.append(.datagram(channel: datagram.channel, bytes: datagram.copyData()))
                case .ping:
                    ackEliciting = true
                case .close(let close):
                    finish(reason: .closedByPeer(code: close.code, reason: close.reason), now: now)
                    return
                case .maxData(let limit):
                    ackEliciting = true
                    peerMaxData = max(peerMaxData, limit)
                case .dataBlocked:
                    ackEliciting = true
                    maxDataPending = true
                case .pathChallenge(let data):
                    paths.owe(response: data, on: route)
                    // A relayed connection probed from a direct address: the peer is punching from there (perhaps
                    // from a port no candidate named). Probe it straight back while its NAT is open toward us.
                    if paths.current.isRelayed, !route.isRelayed, state == .established {
                        paths.challengeNow(route, now: now)
                    }
                case .pathResponse(let data):
                    handlePathResponse(data, now: now)
                case .observedAddress(let address):
                    ackEliciting = true
                    if let observed = NetworkAddress(wire: address) { events.append(.observedAddress(observed)) }
                case .candidates(let addresses):
                    ackEliciting = true
                    handleCandidates(addresses, now: now)
                }
            }
        } catch let error as WireError {
            violate(.malformedFrame(error), now: now)
            return
        } catch let error as ProtocolError {
            if case .protocolViolation(let violation) = error {
                violate(violation, now: now)
            } else {
                finish(reason: error, now: now)
            }
            return
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        observePacket(from: route, bytes: datagramLength, probing: probing, newest: newest, now: now)
        if ackEliciting { lastAckElicitingReceivedAt = now }
        let gapBelow = receivedPackets.largestReceived.map { packetNumber > $0 + 1 } ?? false
        receivedPackets.onReceived(
            packetNumber, ackEliciting: ackEliciting, immediate: flags.contains(.immediateAck), now: now)
        if flags.contains(.honorsImmediateAck) { peerHonorsImmediateAck = true }
        // We only send ACKs: about once per probe timeout, and at once when the peer is losing packets, make the
        // next ACK ack-eliciting (RFC 9000 §13.2.4). Our own loss recovery then repeats it if it is lost, instead of
        // leaving the peer to back off in silence while all our ACKs vanish.
        if ackEliciting, sentPackets.ackElicitingInFlight == 0, !hasSomethingToSend {
            let quietSince = sentPackets.lastAckElicitingSentTime ?? .zero
            if gapBelow || now - quietSince >= rtt.probeTimeout { pingPending = true }
        }
    }

    /// Closes the connection because the peer broke the protocol.
    mutating func violate(_ violation: ProtocolViolation, now: Instant) {
        let reason = ProtocolError.protocolViolation(violation)
        closeFrame = CloseFrame(code: .protocolViolation, reason: String(describing: violation).prefix(200).description)
        finish(reason: reason, now: now)
    }

    private mutating func handleFragment(_ fragment: MessageFragment) throws(ProtocolError) {
        // The channel is changed where it is stored: a copy would share its buffers, and the first write to a
        // message being reassembled would then copy the whole message (up to 256 KiB) for every fragment.
        let channel = fragment.channel
        let position: Int
        if let existing = receiveChannels.position(of: channel) {
            position = existing
            try receiveChannels.channels[position].receive(fragment, budget: &reassembly)
        } else {
            // A new channel is only added once a fragment for it was accepted.
            var receiver = ReceiveChannel(channel: channel)
            try receiver.receive(fragment, budget: &reassembly)
            position = receiveChannels.insert(receiver, for: channel)
        }
        while let message = receiveChannels.channels[position].pollDelivered() {
            statistics.messagesDelivered += 1
            events.append(.message(channel: channel, bytes: message))
        }
    }

    private mutating func handleAck(_ ack: AckFrame, now: Instant) throws(ProtocolError) {
        // Reuse the last result's storage (taken out of `self` so it is not shared while it is refilled).
        var result = SentPacketTracker<SentFrames>.AckResult()
        swap(&result, &ackScratch)
        defer { ackScratch = result }
        try sentPackets.onAck(ack, now: now, rtt: &rtt, ignoringSamplesSentBefore: stallEndedAt, into: &result)
        statistics.spuriousLosses += result.spuriousLosses
        if result.recoveryWasSpurious {
            // Undo first: losses this same ACK declares then start a new recovery period from the restored window.
            statistics.congestionEventsUndone += 1
            congestion.onSpuriousCongestionEvent()
        }
        if let latest = result.loss.latestSentTime {
            congestion.onCongestionEvent(sentTime: latest, now: now)
        }
        if result.loss.persistentCongestion {
            congestion.onPersistentCongestion(now: now)
        }
        if let sentTime = result.latestAcknowledgedSentTime, result.acknowledgedBytesInFlight > 0 {
            congestion.onAcknowledged(bytes: result.acknowledgedBytesInFlight, sentTime: sentTime, rtt: rtt, now: now)
        }
        if let sample = result.deliverySample {
            congestion.onDeliverySample(sample, bytesInFlight: sentPackets.bytesInFlight, rtt: rtt, now: now)
        }
        // Only channels with newly acknowledged fragments can have completed messages; remember the span of their
        // positions (ascending positions are ascending channel numbers) instead of visiting every channel.
        var lowestTouched = Int.max
        var highestTouched = -1
        for packet in result.acknowledged {
            pathMTU.onAcknowledged(packetNumber: packet.packetNumber, bytes: packet.bytes, now: now)
            if let largest = packet.record.ackLargest {
                receivedPackets.onAckFrameAcknowledged(largestAcknowledged: largest)
            }
            for index in 0..<packet.record.fragmentCount {
                let record = packet.record.fragment(at: index)
                guard let position = sendChannels.position(of: record.channel) else { continue }
                sendChannels.channels[position].onAcknowledged(record, incompleteMessages: &incompleteMessages)
                lowestTouched = min(lowestTouched, position)
                highestTouched = max(highestTouched, position)
            }
        }
        for position in stride(from: lowestTouched, through: highestTouched, by: 1) {
            let channel = sendChannels.ids[position]
            while let (sequence, tag) = sendChannels.channels[position].pollCompleted() {
                events.append(.delivered(channel: channel, sequence: sequence, tag: tag))
            }
        }
        if !result.lost.isEmpty { retransmit(result.lost, now: now) }
    }

    /// Re-queues the frames of lost packets; they go out in new packets under new packet numbers. A lost Path MTU
    /// probe is only news for ``PathMTUDiscovery``, which also sees whether larger datagrams are vanishing.
    mutating func retransmit(_ lost: [SentPacketTracker<SentFrames>.Packet], now: Instant) {
        var smallestLostAboveBase: Int?
        for packet in lost {
            if packet.isPathProbe {
                if pathMTU.onLost(packetNumber: packet.packetNumber, now: now) { statistics.pathMTUProbesLost += 1 }
                continue
            }
            if packet.record.isValidationProbe {
                statistics.pathProbesLost += 1
                continue
            }
            statistics.packetsLost += 1
            if packet.bytes > configuration.maxDatagramSize {
                smallestLostAboveBase = min(smallestLostAboveBase ?? .max, packet.bytes)
            }
            if packet.record.carriesMaxData { maxDataPending = true }
            if packet.record.carriesAddresses { addressesLost() }
            for index in 0..<packet.record.fragmentCount {
                let record = packet.record.fragment(at: index)
                if let position = sendChannels.position(of: record.channel) {
                    sendChannels.channels[position].onLost(record)
                }
            }
        }
        if pathMTU.onLossEvent(smallestLostAboveBase: smallestLostAboveBase, now: now) {
            statistics.pathMTUBlackHoles += 1
        }
    }
}
