import HuddleCrypto
import HuddleProtocol

extension JournalState {
    /// Handles one journal message from the active peer `peer`. A thrown error means: close that connection with a
    /// protocol violation (nothing else is affected). Messages from a peer that is not active are ignored.
    public mutating func receive(_ bytes: [UInt8], from peer: X25519PublicKey, now: Instant) throws(JournalError) {
        guard active.contains(peer) else { return }
        let message = try JournalMessage(decoding: bytes)
        switch message {
        case .announce(let manifest):
            try handleAnnounce(manifest, from: peer, now: now)
        case .have(let id, let ranges):
            try handleHave(id, ranges: ranges, from: peer, now: now)
        case .leavesRequest(let id, let first, let count):
            guard let attachment = attachments[id], let leaves = attachment.leaves else { return }
            guard first + count <= attachment.chunkCount else {
                throw .indexOutOfRange(index: UInt64(first + count), count: attachment.chunkCount)
            }
            let hashes = Array(leaves[(first * MerkleTree.hashLength)..<((first + count) * MerkleTree.hashLength)])
            send(.leaves(id, first: first, hashes: hashes), to: peer)
        case .leaves(let id, let first, let hashes):
            try handleLeaves(id, first: first, hashes: hashes, from: peer, now: now)
        case .chunkRequest(let id, let index):
            guard let attachment = attachments[id] else {
                send(.chunkMissing(id, index: index), to: peer)
                return
            }
            guard index < attachment.chunkCount else {
                throw .indexOutOfRange(index: UInt64(index), count: attachment.chunkCount)
            }
            guard attachment.held.contains(index) else {
                send(.chunkMissing(id, index: index), to: peer)
                return
            }
            let pending = pendingServes[peer, default: 0]
            guard pending < ProtocolLimits.maxPendingServesPerPeer else {
                throw .limitExceeded(what: "chunk requests pending", limit: ProtocolLimits.maxPendingServesPerPeer)
            }
            pendingServes[peer] = pending + 1
            actions.append(.readChunk(id, index: index, for: peer))
        case .chunk(let id, let index, let bytes):
            try handleChunk(id, index: index, bytes: bytes, from: peer, now: now)
        case .chunkMissing(let id, let index):
            guard var attachment = attachments[id] else { return }
            guard index < attachment.chunkCount else {
                throw .indexOutOfRange(index: UInt64(index), count: attachment.chunkCount)
            }
            if attachment.holders[peer]?.contains(index) == true {
                if attachment.isTrusted(peer) { attachment.availability[index] -= 1 }
                attachment.holders[peer]!.remove(index)
            }
            if let request = attachment.requests[index], request.peer == peer {
                attachment.requests[index] = nil
                release(peer)
            }
            attachments[id] = attachment
            schedule(now: now)
        case .remove(let id):
            guard !tombstoneSet.contains(id) || attachments[id] != nil else { return }
            drop(id, except: peer, now: now)
        case .unknown:
            return
        }
    }

    private mutating func handleAnnounce(
        _ manifest: AttachmentManifest, from peer: X25519PublicKey, now: Instant
    ) throws(JournalError) {
        if tombstoneSet.contains(manifest.id) {
            // The announcer missed the removal: tell it.
            send(.remove(manifest.id), to: peer)
            return
        }
        if let existing = attachments[manifest.id] {
            guard existing.manifest == manifest else { throw .conflictingManifest }
            return
        }
        // Over the author's bound: kept until the author's removals make room (see `deferAnnounce`). Over the
        // journal's limit: refused. Neither closes the sender, which may only have forwarded it.
        guard fitsAuthorBound(manifest) else {
            deferAnnounce(manifest)
            return
        }
        guard attachments.count < ProtocolLimits.maxJournalAttachments else {
            announcesRefused += 1
            return
        }
        admit(manifest, from: peer, now: now)
    }

    /// Adds an announced attachment to the queue, tells the application and forwards the ANNOUNCE once to every
    /// active peer but `peer`, so members the author cannot reach directly still learn it (duplicates are no-ops).
    mutating func admit(_ manifest: AttachmentManifest, from peer: X25519PublicKey?, now: Instant) {
        forgetDeferred(manifest.id)
        attachments[manifest.id] = JournalAttachment(manifest: manifest, status: .queued)
        countAuthor(manifest)
        order.append(manifest.id)
        queue.append(manifest.id)
        actions.append(.event(.added(manifest)))
        for other in active where other != peer { send(.announce(manifest), to: other) }
        promote(now: now)
    }

    private mutating func handleHave(
        _ id: AttachmentID, ranges: [Range<Int>], from peer: X25519PublicKey, now: Instant
    ) throws(JournalError) {
        guard var attachment = attachments[id] else { return }
        let count = attachment.chunkCount
        if let last = ranges.map(\.upperBound).max(), last > count {
            throw .indexOutOfRange(index: UInt64(last - 1), count: count)
        }
        var bitmap = attachment.holders[peer] ?? ChunkBitmap(count: count)
        let trusted = attachment.isTrusted(peer)
        for range in ranges {
            for index in range where bitmap.insert(index) && trusted {
                attachment.availability[index] &+= 1
            }
        }
        attachment.holders[peer] = bitmap
        attachments[id] = attachment
        schedule(now: now)
    }

    private mutating func handleLeaves(
        _ id: AttachmentID, first: Int, hashes: [UInt8], from peer: X25519PublicKey, now: Instant
    ) throws(JournalError) {
        guard var attachment = attachments[id], var fetch = attachment.leavesFetch, fetch.peer == peer else { return }
        let count = hashes.count / MerkleTree.hashLength
        guard first % ProtocolLimits.maxLeavesPerMessage == 0, first + count <= attachment.chunkCount,
            count == min(ProtocolLimits.maxLeavesPerMessage, attachment.chunkCount - first)
        else {
            throw .malformed("LEAVES piece \(first) + \(count) does not match a request")
        }
        fetch.buffer.replaceSubrange(
            (first * MerkleTree.hashLength)..<((first + count) * MerkleTree.hashLength), with: hashes)
        fetch.received.insert(first / ProtocolLimits.maxLeavesPerMessage)
        attachment.leavesFetch = fetch
        let pieces =
            (attachment.chunkCount + ProtocolLimits.maxLeavesPerMessage - 1)
            / ProtocolLimits.maxLeavesPerMessage
        guard fetch.received.count == pieces else {
            attachments[id] = attachment
            return
        }
        attachment.leavesFetch = nil
        if MerkleTree.verify(leaves: fetch.buffer, chunkCount: attachment.chunkCount, root: attachment.manifest.root) {
            attachment.leaves = fetch.buffer
            attachment.status = .scanning
            attachments[id] = attachment
            actions.append(.scanStore(id))
        } else {
            // F9: the list is discarded and asked of another holder; this one is not asked for it again.
            attachment.badLeavesFrom.insert(peer)
            attachments[id] = attachment
            schedule(now: now)
        }
    }

    private mutating func handleChunk(
        _ id: AttachmentID, index: Int, bytes: [UInt8], from peer: X25519PublicKey, now: Instant
    ) throws(JournalError) {
        guard var attachment = attachments[id] else { return }
        guard index < attachment.chunkCount else {
            throw .indexOutOfRange(index: UInt64(index), count: attachment.chunkCount)
        }
        let requested = attachment.requests[index]
        if let requested, requested.peer == peer {
            attachment.requests[index] = nil
            release(peer)
        }
        // Unrequested or duplicate chunks (a late answer after a timeout) are used if still needed.
        guard attachment.leaves != nil, attachment.status == .fetching, !attachment.held.contains(index) else {
            attachments[id] = attachment
            return
        }
        guard attachment.verify(bytes, index: index) else {
            badChunksReceived += 1
            let wasTrusted = attachment.isTrusted(peer)
            attachment.strikes[peer, default: 0] += 1
            attachment.refusedBy[index, default: []].insert(peer)
            if wasTrusted, !attachment.isTrusted(peer) {
                // F10: avoided for this attachment from now on; its holdings no longer count and its outstanding
                // requests go to other holders at once.
                if let bitmap = attachment.holders[peer] {
                    for held in bitmap.indices { attachment.availability[held] -= 1 }
                }
                for (other, request) in attachment.requests where request.peer == peer {
                    attachment.requests[other] = nil
                    release(peer)
                }
            }
            attachments[id] = attachment
            schedule(now: now)
            return
        }
        if let requested, requested.peer != peer {
            // Someone else's answer won: that request's slot is freed, its late answer will be ignored.
            attachment.requests[index] = nil
            release(requested.peer)
        }
        chunksVerified += 1
        stalled.remove(peer)
        attachment.held.insert(index)
        attachment.refusedBy[index] = nil
        attachment.lastProgress = now
        attachment.pendingHave.append(index)
        if attachment.haveDeadline == nil { attachment.haveDeadline = now + Self.haveDelay }
        attachments[id] = attachment
        actions.append(.writeChunk(id, index: index, bytes: bytes))
        actions.append(.event(.progress(id, verifiedBytes: attachment.verifiedBytes)))
        if attachment.pendingHave.count >= Self.haveBatch { flushHave(id) }
        if attachment.held.isFull { finish(id, now: now) }
        schedule(now: now)
    }
}
