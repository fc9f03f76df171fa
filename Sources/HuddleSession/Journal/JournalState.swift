import DequeModule
import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// The journal of one node in one session, as a sans-IO state machine: the attachments every member shares, who
/// holds which chunks, and the downloads that fetch them from all holders at once.
///
/// Inputs: peers becoming active or inactive (``peerActive(_:now:)``, ``peerInactive(_:now:)``), journal messages
/// from peers (``receive(_:from:now:)``, which throws a ``JournalError`` when the caller must close that peer),
/// the store's answers (``chunkRead(_:index:bytes:for:now:)``, ``storedChunk(_:index:bytes:)``,
/// ``storeScanned(_:now:)``, ``storeFailed(_:reason:now:)``), timers (``handleTimeout(now:)``) and local operations
/// (``add(_:leaves:now:)``, ``remove(_:now:)``). Outputs: ``JournalAction``s from ``pollAction()``.
///
/// Rules:
/// - Every attachment is announced to every peer when it is added and to every peer that becomes active, so a late
///   joiner learns everything that exists; holders follow their ANNOUNCE with HAVE.
/// - A receiver first fetches the leaf list from one holder and checks it against the signed root (a holder whose
///   list does not match is not asked again), then asks its store what it already holds (resumption), then
///   requests the missing chunks from every holder in parallel: rarest first (fewest holders), ties broken in an
///   order that differs per node so receivers fetch different chunks and can swap them. At most
///   ``ProtocolLimits/maxChunkRequestsPerPeer`` requests are outstanding per peer and
///   ``ProtocolLimits/maxChunkRequestsInFlight`` overall.
/// - Every chunk is checked against its leaf on arrival. A bad chunk is discarded and asked of another holder; a
///   holder that sent ``ProtocolLimits/maxBadChunksPerHolder`` bad chunks is avoided for that attachment.
/// - A request unanswered for ``ProtocolLimits/chunkRequestTimeout`` is asked of another holder, and the silent
///   holder gets one request at a time until it answers again.
/// - Receivers advertise what they verified (HAVE, batched), so they serve each other; an author that leaves is
///   not needed once every chunk exists elsewhere.
/// - REMOVE deletes an attachment everywhere (forwarded once by each member, remembered so a late ANNOUNCE cannot
///   bring it back).
/// - At most ``ProtocolLimits/maxConcurrentDownloads`` downloads run; the rest wait in announcement order.
public struct JournalState: Sendable {
    /// The local node's Noise static key.
    public let local: X25519PublicKey

    var attachments: [AttachmentID: JournalAttachment] = [:]
    /// Attachments in the order they were added or announced.
    var order: [AttachmentID] = []
    var running: [AttachmentID] = []
    var queue = Deque<AttachmentID>()
    var tombstones = Deque<AttachmentID>()
    var tombstoneSet: Set<AttachmentID> = []
    var active: [X25519PublicKey] = []
    /// Outstanding chunk requests per peer, over all attachments.
    var requestsTo: [X25519PublicKey: Int] = [:]
    var requestsInFlight = 0
    /// Peers whose last request timed out: one request at a time until they answer.
    var stalled: Set<X25519PublicKey> = []
    /// Chunk reads for a peer the store has not answered yet.
    var pendingServes: [X25519PublicKey: Int] = [:]
    /// What each author (or all strangers together) has in the journal
    /// (``ProtocolLimits/maxJournalAttachmentsPerAuthor``), and which share each attachment was counted in.
    var authorUsage: [AuthorBucket: AuthorUsage] = [:]
    var countedIn: [AttachmentID: AuthorBucket] = [:]
    /// Signing keys known to belong to members (``memberSeen(signingKey:)``), oldest first.
    var knownAuthors: Set<Ed25519PublicKey> = []
    var knownAuthorOrder = Deque<Ed25519PublicKey>()
    /// ANNOUNCEs over their share's bound, waiting for removals to make room.
    var deferredAnnounces: [AuthorBucket: [AttachmentManifest]] = [:]
    /// ANNOUNCEs refused: over the journal's limit, or over their author's bound with
    /// ``ProtocolLimits/maxDeferredAnnouncesPerAuthor`` already waiting. The sender is not at fault (it may have only
    /// forwarded them), so this is counted, not a protocol violation.
    public internal(set) var announcesRefused = 0
    /// The per-node rotation of the rarest-first tie-break.
    let tieBreak: Int
    var actions = Deque<JournalAction>()

    /// Statistics: bad chunks received, chunk requests that timed out, chunks served.
    public internal(set) var badChunksReceived = 0
    /// Chunk requests that timed out.
    public internal(set) var requestTimeouts = 0
    /// Chunks served to peers.
    public private(set) var chunksServed = 0
    /// Chunks received and verified (from the network, not the store).
    public internal(set) var chunksVerified = 0

    /// A journal for the node with Noise static key `local`, knowing no attachment.
    public init(local: X25519PublicKey) {
        self.local = local
        var seed = 0
        for byte in local.bytes.prefix(4) { seed = seed << 8 | Int(byte) }
        tieBreak = seed
    }

    // MARK: - Queries

    /// The next action, or `nil`.
    public mutating func pollAction() -> JournalAction? { actions.popFirst() }

    /// The manifests of every attachment, in the order they were added or announced.
    public var manifests: [AttachmentManifest] { order.compactMap { attachments[$0]?.manifest } }

    /// The manifest of `id`.
    public func manifest(_ id: AttachmentID) -> AttachmentManifest? { attachments[id]?.manifest }

    /// Whether every chunk of `id` is verified and stored.
    public func isComplete(_ id: AttachmentID) -> Bool { attachments[id]?.status == .complete }

    /// The verified bytes of `id` held.
    public func verifiedBytes(_ id: AttachmentID) -> UInt64 { attachments[id]?.verifiedBytes ?? 0 }

    /// The verified chunks of `id` held.
    public func heldChunks(_ id: AttachmentID) -> ChunkBitmap? { attachments[id]?.held }

    /// The nodes known to hold every chunk of `id`: this node (if it does) and each active peer whose HAVE covers
    /// the whole attachment.
    public func completeHolders(_ id: AttachmentID) -> Int {
        guard let attachment = attachments[id] else { return 0 }
        let peers = attachment.holders.values.filter(\.isFull).count
        return peers + (attachment.status == .complete ? 1 : 0)
    }

    /// Downloads running (leaf list, scan or chunks).
    public var runningDownloads: [AttachmentID] { running }

    /// Downloads waiting for a slot.
    public var queuedDownloads: [AttachmentID] { Array(queue) }

    /// Outstanding chunk requests, over all peers.
    public var outstandingRequests: Int { requestsInFlight }

    /// Chunk reads queued or running to answer `peer`'s requests (bounded by
    /// ``ProtocolLimits/maxPendingServesPerPeer``); for tests of what a peer can make this node hold.
    @_spi(Testing) public func pendingServes(for peer: X25519PublicKey) -> Int { pendingServes[peer] ?? 0 }

    /// The peers `id`'s download avoids after bad chunks.
    public func avoidedHolders(_ id: AttachmentID) -> [X25519PublicKey] {
        guard let attachment = attachments[id] else { return [] }
        return attachment.strikes.keys.filter { !attachment.isTrusted($0) }
    }

    /// The leaf hash of chunk `index` of `id`, once the leaf list is verified.
    public func leaf(_ id: AttachmentID, index: Int) -> [UInt8]? {
        guard let attachment = attachments[id], attachment.leaves != nil, index < attachment.chunkCount else {
            return nil
        }
        return Array(attachment.leaf(index))
    }

    // MARK: - Peers

    /// `peer` became an active member: it learns every attachment (and every removal) this node knows.
    public mutating func peerActive(_ peer: X25519PublicKey, now: Instant) {
        guard peer != local, !active.contains(peer) else { return }
        active.append(peer)
        for id in order {
            guard let attachment = attachments[id] else { continue }
            send(.announce(attachment.manifest), to: peer)
            if attachment.leaves != nil { send(.have(id, ranges: attachment.held.ranges), to: peer) }
        }
        for id in tombstones { send(.remove(id), to: peer) }
    }

    /// `peer` is no longer active: its holdings are forgotten and its requests go to other holders.
    public mutating func peerInactive(_ peer: X25519PublicKey, now: Instant) {
        guard let position = active.firstIndex(of: peer) else { return }
        active.remove(at: position)
        for id in order {
            guard var attachment = attachments[id] else { continue }
            attachment.count(peer, sign: -1)
            attachment.holders[peer] = nil
            for (index, request) in attachment.requests where request.peer == peer {
                attachment.requests[index] = nil
                requestsInFlight -= 1
            }
            if attachment.leavesFetch?.peer == peer { attachment.leavesFetch = nil }
            attachments[id] = attachment
        }
        requestsTo[peer] = nil
        pendingServes[peer] = nil
        stalled.remove(peer)
        schedule(now: now)
    }

    // MARK: - Local operations

    /// Adds an attachment this node authored (or otherwise holds completely): its chunks must already be in the
    /// store, and `leaves` is its leaf list (from ``MerkleLeafHasher``). Every active peer is told.
    public mutating func add(_ manifest: AttachmentManifest, leaves: [UInt8], now: Instant) throws(JournalError) {
        guard attachments[manifest.id] == nil, !tombstoneSet.contains(manifest.id) else {
            throw .conflictingManifest
        }
        guard attachments.count < ProtocolLimits.maxJournalAttachments else {
            throw .limitExceeded(what: JournalError.journalAttachments, limit: ProtocolLimits.maxJournalAttachments)
        }
        // This node vouches for what it adds itself: the author counts as a member here.
        memberSeen(signingKey: manifest.author, now: now)
        guard fitsAuthorBound(manifest) else { throw authorBoundError(manifest) }
        guard MerkleTree.verify(leaves: leaves, chunkCount: manifest.chunkCount, root: manifest.root) else {
            throw .malformed("the leaf list does not match the manifest's root")
        }
        var attachment = JournalAttachment(manifest: manifest, status: .complete)
        attachment.leaves = leaves
        for index in 0..<attachment.chunkCount { attachment.held.insert(index) }
        attachments[manifest.id] = attachment
        countAuthor(manifest)
        order.append(manifest.id)
        actions.append(.event(.added(manifest)))
        actions.append(.event(.completed(manifest.id)))
        for peer in active {
            send(.announce(manifest), to: peer)
            send(.have(manifest.id, ranges: attachment.held.ranges), to: peer)
        }
    }

    /// Removes an attachment for everyone: every active peer is told, the store deletes it.
    public mutating func remove(_ id: AttachmentID, now: Instant) throws(JournalError) {
        guard attachments[id] != nil else { throw .unknownAttachment }
        drop(id, except: nil, now: now)
    }

    /// Drops `id` locally, remembers its removal and tells every active peer but `except`.
    mutating func drop(_ id: AttachmentID, except: X25519PublicKey?, now: Instant) {
        remember(id)
        forgetDeferred(id)
        guard let attachment = attachments.removeValue(forKey: id) else { return }
        for (_, request) in attachment.requests { release(request.peer) }
        order.removeAll { $0 == id }
        queue.removeAll { $0 == id }
        let wasRunning = running.contains(id)
        running.removeAll { $0 == id }
        actions.append(.deleteAttachment(id))
        actions.append(.event(.removed(id)))
        for peer in active where peer != except { send(.remove(id), to: peer) }
        if wasRunning { promote(now: now) }
        uncountAuthor(attachment.manifest, now: now)
    }

    mutating func remember(_ id: AttachmentID) {
        guard tombstoneSet.insert(id).inserted else { return }
        tombstones.append(id)
        if tombstones.count > ProtocolLimits.maxJournalTombstones, let oldest = tombstones.popFirst() {
            tombstoneSet.remove(oldest)
        }
    }

    // MARK: - Store answers

    /// What checks the chunks of `id` (``ChunkVerifier``), once its leaf list is known.
    public func chunkVerifier(_ id: AttachmentID) -> ChunkVerifier? {
        attachments[id]?.verifier
    }

    /// The store read chunk `index` of `id` for `peer` (`nil`: it does not have it after all). `verified`: the driver
    /// already checked `bytes` with ``chunkVerifier(_:)`` (off the event loop), so it is not hashed again.
    public mutating func chunkRead(
        _ id: AttachmentID, index: Int, bytes: [UInt8]?, for peer: X25519PublicKey, now: Instant,
        verified: Bool = false
    ) {
        if let pending = pendingServes[peer] { pendingServes[peer] = pending > 1 ? pending - 1 : nil }
        guard active.contains(peer) else { return }
        guard let bytes, let attachment = attachments[id], index < attachment.chunkCount,
            verified || attachment.verify(bytes, index: index)
        else {
            // Not held (or no longer intact): say so, so the peer asks someone else now rather than at its timeout.
            if var attachment = attachments[id], attachment.held.remove(index) {
                // The store lost a chunk it had: fetch it again like any missing one.
                let wasComplete = attachment.status == .complete
                if wasComplete { attachment.status = .queued }
                attachments[id] = attachment
                if wasComplete {
                    queue.append(id)
                    promote(now: now)
                }
            }
            send(.chunkMissing(id, index: index), to: peer)
            return
        }
        chunksServed += 1
        send(.chunk(id, index: index, bytes: bytes), to: peer)
    }

    /// The store holds chunk `index` of `id` (during a scan): it is verified against its leaf and counted as held
    /// if it matches; a chunk that does not match is fetched again (and overwritten).
    public mutating func storedChunk(_ id: AttachmentID, index: Int, bytes: [UInt8]) {
        guard var attachment = attachments[id], attachment.status == .scanning, index < attachment.chunkCount,
            attachment.verify(bytes, index: index)
        else { return }
        attachment.held.insert(index)
        attachments[id] = attachment
    }

    /// The store holds chunks `indices` of `id` (during a scan), each already checked by the driver with
    /// ``chunkVerifier(_:)``: they count as held.
    public mutating func storedVerifiedChunks(_ id: AttachmentID, indices: [Int]) {
        guard var attachment = attachments[id], attachment.status == .scanning else { return }
        for index in indices where index >= 0 && index < attachment.chunkCount { attachment.held.insert(index) }
        attachments[id] = attachment
    }

    /// The store reported everything it holds for `id`: the download fetches only what is missing.
    public mutating func storeScanned(_ id: AttachmentID, now: Instant) {
        guard var attachment = attachments[id], attachment.status == .scanning else { return }
        attachment.status = .fetching
        attachment.lastProgress = now
        attachments[id] = attachment
        if attachment.held.setCount > 0 {
            actions.append(.event(.progress(id, verifiedBytes: attachment.verifiedBytes)))
        }
        for peer in active { send(.have(id, ranges: attachment.held.ranges), to: peer) }
        if attachment.held.isFull { finish(id, now: now) }
        schedule(now: now)
    }

    /// The store failed for `id` (disk full): the download stops, verified chunks are kept.
    public mutating func storeFailed(_ id: AttachmentID, error: JournalStoreError, now: Instant) {
        guard var attachment = attachments[id], attachment.status != .failed else { return }
        for (_, request) in attachment.requests { release(request.peer) }
        attachment.requests = [:]
        attachment.status = .failed
        attachments[id] = attachment
        actions.append(.event(.failed(id, error)))
        if running.contains(id) {
            running.removeAll { $0 == id }
            promote(now: now)
        }
    }

    // MARK: - Helpers

    mutating func send(_ message: JournalMessage, to peer: X25519PublicKey) {
        actions.append(.send(message.encoded(), channel: message.channel, to: peer))
    }

    /// Frees one request slot of `peer`.
    mutating func release(_ peer: X25519PublicKey) {
        requestsInFlight -= 1
        if let count = requestsTo[peer] { requestsTo[peer] = count > 1 ? count - 1 : nil }
    }
}
