import HuddleWire

extension Connection {
    /// Processes the decrypted frames of an authenticated packet. A protocol violation closes the connection with
    /// CLOSE(protocolViolation); nothing else is affected.
    mutating func handlePayload(_ payload: UnsafeRawBufferPointer, packetNumber: UInt64, now: Instant) {
        guard state != .closed else { return }
        lastReceivedAt = now
        idleTimerStartedAt = now
        sentAckElicitingSinceReceive = false
        statistics.packetsReceived += 1
        statistics.bytesReceived += payload.count + TransportHeader.minimumPacketLength
        if case .draining = state { return }

        var decoder = FrameDecoder(payload)
        var ackEliciting = false
        do {
            while let frame = try decoder.next() {
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
        if ackEliciting { lastAckElicitingReceivedAt = now }
        let gapBelow = receivedPackets.largestReceived.map { packetNumber > $0 + 1 } ?? false
        receivedPackets.onReceived(packetNumber, ackEliciting: ackEliciting, now: now)
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
        // message being reassembled would then copy the whole message (up to 256 KiB) for every fragment. A channel
        // created here and left empty by a refused fragment is indistinguishable from no channel.
        let channel = fragment.channel
        if receiveChannels[channel] == nil { receiveChannels[channel] = ReceiveChannel(channel: channel) }
        try receiveChannels[channel]!.receive(fragment, budget: &reassembly)
        while let message = receiveChannels[channel]!.pollDelivered() {
            statistics.messagesDelivered += 1
            events.append(.message(channel: channel, bytes: message))
        }
    }

    private mutating func handleAck(_ ack: AckFrame, now: Instant) throws(ProtocolError) {
        let result = try sentPackets.onAck(ack, now: now, rtt: &rtt)
        if let latest = result.loss.latestSentTime {
            congestion.onCongestionEvent(sentTime: latest, now: now)
        }
        if result.loss.persistentCongestion {
            congestion.onPersistentCongestion(now: now)
        }
        if let sentTime = result.latestAcknowledgedSentTime, result.acknowledgedBytesInFlight > 0 {
            congestion.onAcknowledged(bytes: result.acknowledgedBytesInFlight, sentTime: sentTime, rtt: rtt, now: now)
        }
        // Only channels with newly acknowledged fragments can have completed messages; remember which (a tiny set,
        // usually one or two channels) instead of sorting every channel on every ACK.
        var touched: [ChannelID] = []
        for packet in result.acknowledged {
            for frame in packet.record {
                switch frame {
                case .fragment(let record):
                    sendChannels[record.channel]?.onAcknowledged(record, incompleteMessages: &incompleteMessages)
                    if !touched.contains(record.channel) { touched.append(record.channel) }
                case .ack(let largest):
                    receivedPackets.onAckFrameAcknowledged(largestAcknowledged: largest)
                case .maxData:
                    break
                }
            }
        }
        for channel in touched.sorted() {
            while let sequence = sendChannels[channel]?.pollCompleted() {
                events.append(.delivered(channel: channel, sequence: sequence))
            }
        }
        retransmit(result.lost)
    }

    /// Re-queues the frames of lost packets; they go out in new packets under new packet numbers.
    mutating func retransmit(_ lost: [SentPacketTracker<[SentFrame]>.Packet]) {
        statistics.packetsLost += lost.count
        for packet in lost {
            for frame in packet.record {
                switch frame {
                case .fragment(let record): sendChannels[record.channel]?.onLost(record)
                case .maxData: maxDataPending = true
                case .ack: break
                }
            }
        }
    }
}
