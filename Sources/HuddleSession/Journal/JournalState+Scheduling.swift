import HuddleCrypto
import HuddleProtocol

extension JournalState {
    /// Verified chunks advertised together in one HAVE: 8 (an update every 512 KiB rather than every chunk).
    static let haveBatch = 8
    /// How long a verified chunk may wait to be advertised: 250 ms (so a slow download still feeds the swarm).
    static let haveDelay = Duration.milliseconds(250)

    /// When ``handleTimeout(now:)`` must next run, if ever.
    public var nextDeadline: Instant? {
        var earliest: Instant?
        func consider(_ instant: Instant?) {
            guard let instant else { return }
            if earliest.map({ instant < $0 }) ?? true { earliest = instant }
        }
        for id in running {
            guard let attachment = attachments[id] else { continue }
            consider(attachment.leavesFetch?.deadline)
            consider(attachment.haveDeadline)
            for (_, request) in attachment.requests { consider(request.deadline) }
            if !queue.isEmpty { consider(attachment.lastProgress + ProtocolLimits.downloadStallTimeout) }
        }
        return earliest
    }

    /// Runs the timers due at `now`: request timeouts, batched HAVEs, stalled downloads.
    public mutating func handleTimeout(now: Instant) {
        for id in running {
            guard var attachment = attachments[id] else { continue }
            if let fetch = attachment.leavesFetch, fetch.deadline <= now {
                attachment.leavesFetch = nil
                // Ask someone else next time (this one goes to the back of the line, not out of it).
                attachment.leavesTimedOut.removeAll { $0 == fetch.peer }
                attachment.leavesTimedOut.append(fetch.peer)
            }
            for (index, request) in attachment.requests where request.deadline <= now {
                attachment.requests[index] = nil
                attachment.refusedBy[index, default: []].insert(request.peer)
                release(request.peer)
                stalled.insert(request.peer)
                requestTimeouts += 1
            }
            attachments[id] = attachment
            if let deadline = attachment.haveDeadline, deadline <= now { flushHave(id) }
        }
        if !queue.isEmpty {
            let stuck = running.filter { id in
                guard let attachment = attachments[id] else { return false }
                return attachment.lastProgress + ProtocolLimits.downloadStallTimeout <= now
            }
            for id in stuck { pause(id) }
            promote(now: now)
        }
        schedule(now: now)
    }

    /// Moves a stalled download to the back of the queue, keeping what it verified.
    mutating func pause(_ id: AttachmentID) {
        guard var attachment = attachments[id] else { return }
        for (_, request) in attachment.requests { release(request.peer) }
        attachment.requests = [:]
        attachment.leavesFetch = nil
        attachment.status = .queued
        attachments[id] = attachment
        running.removeAll { $0 == id }
        queue.append(id)
        actions.append(.event(.paused(id)))
    }

    /// Starts queued downloads while slots are free.
    mutating func promote(now: Instant) {
        while running.count < ProtocolLimits.maxConcurrentDownloads, let id = queue.popFirst() {
            guard var attachment = attachments[id], attachment.status == .queued else { continue }
            running.append(id)
            attachment.lastProgress = now
            if attachment.chunkCount == 0 {
                // Nothing to fetch: the manifest's root was checked to be the empty root when it was decoded.
                attachment.leaves = []
                attachments[id] = attachment
                finish(id, now: now)
                continue
            }
            attachment.status = attachment.leaves == nil ? .fetchingLeaves : .fetching
            attachments[id] = attachment
        }
        schedule(now: now)
    }

    /// Marks a download complete and frees its slot.
    mutating func finish(_ id: AttachmentID, now: Instant) {
        guard var attachment = attachments[id] else { return }
        for (_, request) in attachment.requests { release(request.peer) }
        attachment.requests = [:]
        attachment.refusedBy = [:]
        attachment.status = .complete
        attachments[id] = attachment
        flushHave(id)
        actions.append(.event(.completed(id)))
        running.removeAll { $0 == id }
        promote(now: now)
    }

    /// Advertises the chunks verified since the last HAVE to every active peer.
    mutating func flushHave(_ id: AttachmentID) {
        guard var attachment = attachments[id], !attachment.pendingHave.isEmpty else { return }
        var pending = ChunkBitmap(count: attachment.chunkCount)
        for index in attachment.pendingHave { pending.insert(index) }
        attachment.pendingHave = []
        attachment.haveDeadline = nil
        attachments[id] = attachment
        let ranges = pending.ranges
        for peer in active { send(.have(id, ranges: ranges), to: peer) }
    }

    /// Sends leaf-list and chunk requests while the limits allow.
    mutating func schedule(now: Instant) {
        for id in running {
            guard var attachment = attachments[id] else { continue }
            switch attachment.status {
            case .fetchingLeaves where attachment.leavesFetch == nil:
                requestLeaves(&attachment, now: now)
            case .fetching:
                requestChunks(&attachment, now: now)
            default:
                break
            }
            attachments[id] = attachment
        }
    }

    private mutating func requestLeaves(_ attachment: inout JournalAttachment, now: Instant) {
        let candidates = active.filter {
            attachment.holders[$0] != nil && attachment.isTrusted($0) && !attachment.badLeavesFrom.contains($0)
        }
        // One that never timed out first; else the one whose timeout lies furthest back.
        guard
            let peer = candidates.first(where: { !attachment.leavesTimedOut.contains($0) })
                ?? attachment.leavesTimedOut.first(where: { candidates.contains($0) })
        else { return }
        let id = attachment.manifest.id
        let count = attachment.chunkCount
        for first in stride(from: 0, to: count, by: ProtocolLimits.maxLeavesPerMessage) {
            send(
                .leavesRequest(id, first: first, count: min(ProtocolLimits.maxLeavesPerMessage, count - first)),
                to: peer)
        }
        attachment.leavesFetch = JournalAttachment.LeavesFetch(
            peer: peer, deadline: now + ProtocolLimits.leavesRequestTimeout,
            buffer: [UInt8](repeating: 0, count: count * MerkleTree.hashLength), received: [])
    }

    private mutating func requestChunks(_ attachment: inout JournalAttachment, now: Instant) {
        let id = attachment.manifest.id
        for peer in active {
            guard attachment.holders[peer] != nil, attachment.isTrusted(peer) else { continue }
            let limit = stalled.contains(peer) ? 1 : ProtocolLimits.maxChunkRequestsPerPeer
            while requestsTo[peer, default: 0] < limit, requestsInFlight < ProtocolLimits.maxChunkRequestsInFlight {
                guard let index = pickChunk(attachment, from: peer) else { break }
                attachment.requests[index] = JournalAttachment.Request(
                    peer: peer, deadline: now + ProtocolLimits.chunkRequestTimeout)
                requestsTo[peer, default: 0] += 1
                requestsInFlight += 1
                send(.chunkRequest(id, index: index), to: peer)
            }
        }
    }

    /// The rarest chunk `peer` holds that is neither held nor requested; ties go to the first in this node's
    /// rotation, so receivers start at different places and have different chunks to swap.
    private func pickChunk(_ attachment: JournalAttachment, from peer: X25519PublicKey) -> Int? {
        guard let bitmap = attachment.holders[peer] else { return nil }
        let count = attachment.chunkCount
        let start = tieBreak % count
        var best: Int?
        var bestAvailability = Int.max
        for step in 0..<count {
            var index = start + step
            if index >= count { index -= count }
            guard bitmap.contains(index), !attachment.held.contains(index), attachment.requests[index] == nil else {
                continue
            }
            let availability = Int(attachment.availability[index])
            guard availability < bestAvailability else { continue }
            if let refused = attachment.refusedBy[index], refused.contains(peer),
                hasOtherHolder(attachment, index: index, refused: refused)
            {
                continue
            }
            best = index
            bestAvailability = availability
            if availability <= 1 { break }
        }
        return best
    }

    private func hasOtherHolder(_ attachment: JournalAttachment, index: Int, refused: Set<X25519PublicKey>) -> Bool {
        active.contains { peer in
            !refused.contains(peer) && attachment.isTrusted(peer) && attachment.holders[peer]?.contains(index) == true
        }
    }
}
