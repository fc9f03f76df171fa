import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTransport

/// What the application asks of its session (attachments, activity, invitations, messages, statistics): each runs
/// on the event loop with the cores and the endpoint (``performOnCore(_:)``) and dispatches what it produced.
extension SessionEngine {
    /// Checks that `context`, the session of the handle an operation came through, is this engine's session and
    /// joined: a handle acts on its own session only, never on whichever one the node has now.
    ///
    /// - Throws: ``HuddleError/invalidated(_:)`` with the reason once that session is over (left, ended, the node
    ///   shut down), ``HuddleError/notJoined`` while it is not joined yet.
    func requireJoined(_ context: SessionContext) throws(HuddleError) {
        try Self.requireJoined(context, current: self.context)
    }

    /// ``requireJoined(_:)`` against `current`, the engine's session as the caller sees it (off the actor, the
    /// lock-protected ``sendingContext``).
    nonisolated static func requireJoined(_ context: SessionContext, current: SessionContext?) throws(HuddleError) {
        if case .invalidated(let reason) = context.state.value { throw .invalidated(reason) }
        guard context === current, case .joined = context.state.value else { throw .notJoined }
    }

    /// Stores a new attachment with `importing` (on the blocking-I/O pool), signs its manifest and adds it to the
    /// journal, which announces it to every member.
    func addAttachment(
        in context: SessionContext, metadata: [UInt8],
        importing:
            @escaping @Sendable (FileChunkStore, AttachmentID) throws -> (
                leaves: [UInt8], root: [UInt8], size: UInt64
            )
    ) async throws -> Attachment {
        try requireJoined(context)
        guard let store = context.journal.store else { throw HuddleError.notJoined }
        var random = SystemRandomGenerator()
        let id = AttachmentID(bytes: random.bytes(count: AttachmentID.length))!
        let imported = try await Attachment.runBlocking { try importing(store, id) }
        do {
            let manifest = try AttachmentManifest(
                id: id, size: imported.size, root: imported.root, metadata: metadata, signingKey: identity.signingKey)
            let refusal = try await performOnCore { machine, endpoint, now in
                machine.updateJournal(&endpoint, now: now) { journal -> JournalError? in
                    do throws(JournalError) {
                        try journal.add(manifest, leaves: imported.leaves, now: now)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            if let refusal { throw refusal }
        } catch let error as JournalError {
            _ = try? await Attachment.runBlocking { store.delete(id) }
            throw HuddleError(error)
        } catch {
            _ = try? await Attachment.runBlocking { store.delete(id) }
            throw error
        }
        guard let attachment = context.journal.attachment(id) else { throw HuddleError.attachmentRemoved }
        return attachment
    }

    /// The members known to hold every chunk of an attachment.
    func completeHolders(_ id: AttachmentID, in context: SessionContext) async throws -> Int {
        try requireJoined(context)
        return try await performOnCore { machine, _, _ in machine.journal.state.completeHolders(id) }
    }

    /// Removes an attachment for every member.
    func removeAttachment(_ id: AttachmentID, in context: SessionContext) async throws {
        try requireJoined(context)
        let refusal = try await performOnCore { machine, endpoint, now in
            machine.updateJournal(&endpoint, now: now) { journal -> JournalError? in
                do throws(JournalError) {
                    try journal.remove(id, now: now)
                    return nil
                } catch {
                    return error
                }
            }
        }
        if let refusal { throw HuddleError(refusal) }
    }

    /// Publishes a new activity payload to every member.
    func setActivity(_ payload: [UInt8], in context: SessionContext) async throws {
        try requireJoined(context)
        try await performOnCore { machine, endpoint, now in
            machine.update(&endpoint, now: now) { $0.setActivity(payload) }
        }
    }

    /// Opens an invitation valid for `duration` and returns its ticket, naming the current members.
    func makeInvitation(validFor duration: Duration, in context: SessionContext) async throws -> Invitation {
        try requireJoined(context)
        var random = SystemRandomGenerator()
        let secret = SecureBytes(count: 32, using: &random)
        let expiresAt = Date().addingTimeInterval(Double(duration.components.seconds))
        let grant = try InvitationGrant(secret: secret, expiresAt: UInt64(expiresAt.timeIntervalSince1970))
        let (hints, relays) = try await performOnCore { machine, endpoint, now in
            let hints = machine.update(&endpoint, now: now) { membership in
                membership.openInvitation(grant)
                return membership.ticketHints(limit: Invitation.maxMembers)
            }
            return (hints ?? [], endpoint.relays(now: now).map(\.address))
        }
        let members = hints.compactMap { hint in
            hint.addresses.first.map { Invitation.Member(staticKey: hint.staticKey, address: $0) }
        }
        return Invitation(
            session: context.id, secret: secret, expiresAt: expiresAt,
            inviterSigningKey: identity.publicIdentity.signingKey, inviterName: name, members: members, relays: relays)
    }

    /// Closes `invitation` on this node (other members close it when it expires).
    func closeInvitation(_ invitation: Invitation, in context: SessionContext) async {
        // A session that is over took its invitations with it; another session's must not be touched.
        guard (try? requireJoined(context)) != nil,
            let id = try? SessionKeys.admissionID(invitationSecret: invitation.secret)
        else { return }
        _ = try? await performOnCore { machine, endpoint, now in
            machine.update(&endpoint, now: now) { $0.closeInvitation(id) }
        }
    }

    /// Sends an encoded envelope to `recipients` (`nil`: every other active participant).
    ///
    /// Runs off the actor (the session's state and participants are lock-protected snapshots), so sending does not
    /// wait for the engine. Reliable messages go into the transport's outbound queue addressed by the recipient's
    /// static key (the event loop resolves it to the recipient's current connection when it drains the queue, so a
    /// member that rejoined on a new connection is reached there) and this returns once they are queued; it suspends
    /// only while a recipient's queue is full. Unreliable datagrams are handed to the endpoint in one event-loop call
    /// for all recipients.
    nonisolated func send(
        _ bytes: [UInt8], reliable: Bool, to recipients: Set<Participant>?, in context: SessionContext
    ) async throws {
        try Self.requireJoined(context, current: sendingContext.withLockedValue { $0 })
        let local = context.local
        let participants = context.participants.value
        let keys: [X25519PublicKey]
        if let recipients {
            for recipient in recipients where !participants.contains(recipient) && recipient != local {
                throw HuddleError.notAParticipant(recipient)
            }
            keys = recipients.compactMap { $0 == local ? nil : $0.staticKey }
        } else {
            keys = participants.compactMap { $0 == local ? nil : $0.staticKey }
        }
        if reliable {
            var queued = 0
            defer { metrics?.sent(count: queued, bytes: bytes.count, reliable: true) }
            for key in keys {
                do throws(TransportError) {
                    try await driver.enqueue(bytes, on: Self.messengerChannel, toPeer: key)
                    queued += 1
                } catch .connectionClosed {
                    // The participant left while we were sending; its departure is reported on its own.
                    continue
                } catch {
                    throw HuddleError.transport(error)
                }
            }
            return
        }
        do {
            let sent = try await driver.perform { endpoint, _ in
                var sent = 0
                for key in keys {
                    guard let connection = endpoint.connectionID(for: key) else { continue }
                    do throws(ProtocolError) {
                        try endpoint.sendDatagram(bytes, on: Self.messengerChannel, to: connection)
                        sent += 1
                    } catch .connectionClosed {
                        // The participant left while we were sending; its departure is reported on its own.
                        continue
                    }
                }
                return sent
            }
            metrics?.sent(count: sent, bytes: bytes.count, reliable: false)
        } catch let error as TransportError {
            throw HuddleError.transport(error)
        } catch let error as ProtocolError {
            if case .messageTooLarge(let size, let limit) = error {
                throw HuddleError.datagramTooLarge(size: size, limit: limit)
            }
            throw HuddleError.transport(.protocolError(error))
        }
    }

    /// Connection figures for every other active participant.
    func peerStatistics(in context: SessionContext) async throws -> [PeerStatistics] {
        try requireJoined(context)
        let others = Array(context.participants.value.subtracting([context.local]))
        return try await driver.perform { endpoint, _ in
            others.compactMap { participant -> PeerStatistics? in
                guard let id = endpoint.connectionID(for: participant.staticKey),
                    let connection = endpoint.connection(id)
                else { return nil }
                let path: PeerPath =
                    switch connection.route {
                    case .direct(let address): .direct(address)
                    case .relayed(let relay, _): .relayed(via: relay)
                    }
                return PeerStatistics(
                    participant: participant, smoothedRTT: connection.rtt.smoothed,
                    packetsSent: connection.statistics.packetsSent, packetsLost: connection.statistics.packetsLost,
                    path: path, datagramSize: connection.pathDatagramSize)
            }
        }
    }

    /// The node's counters and levels now, and the current session's participant count, for ``NodeMetrics``.
    func metricsSample() async throws -> (sample: NodeMetricsSample, participants: Int) {
        let transport = try await driver.statistics()
        let loop = self.loop
        let sample = try await driver.perform { endpoint, _ in
            NodeMetricsSample(
                endpoint: endpoint, transport: transport,
                session: loop.value.flatMap(NodeMetricsSample.SessionCounters.init))
        }
        let participants = context.map { $0.isInvalidated ? 0 : $0.participants.value.count } ?? 0
        return (sample, participants)
    }

    /// Runs `body` on the event loop with the session's machine and the endpoint, then dispatches what it produced.
    func performOnCore<Result: Sendable>(
        _ body: @escaping @Sendable (inout SessionMachine<FileChunkStore>, inout Endpoint, Instant) throws -> Result
    ) async throws -> Result {
        let loop = self.loop
        let (result, output) = try await driver.perform { endpoint, now -> (Result, LoopSession.Output) in
            guard loop.value != nil else { throw HuddleError.notJoined }
            let result = try body(&loop.value!.machine, &endpoint, now)
            return (result, loop.value!.drain())
        }
        await dispatch(output)
        return result
    }
}
