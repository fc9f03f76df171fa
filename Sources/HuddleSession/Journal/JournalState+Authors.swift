import HuddleCrypto
import HuddleProtocol

/// Whose share of a journal an attachment counts against: its author's, when the author is known to this node as a
/// member (it was seen joining, or it is this node), else one shared share for every author this node never saw as
/// a member. Without the shared one, a member could sign announcements with a fresh key each and take the whole
/// journal despite the per-author bound.
enum AuthorBucket: Hashable, Sendable {
    case member(Ed25519PublicKey)
    case stranger
}

/// What one author (or all strangers together) has in a journal: attachments held, downloading or queued, and their
/// bytes.
struct AuthorUsage: Sendable {
    var count = 0
    var bytes: UInt64 = 0
}

extension JournalState {
    /// Records that `signingKey` belongs to a member (it joined while this node was in the session, or this node
    /// added an attachment of it), so its attachments count against its own bound, not the strangers' one; its
    /// announcements that waited as a stranger's move to its own share and are admitted if they fit there. At most
    /// ``ProtocolLimits/maxKnownJournalAuthors`` are remembered, the oldest forgotten first.
    public mutating func memberSeen(signingKey: Ed25519PublicKey, now: Instant) {
        guard knownAuthors.insert(signingKey).inserted else { return }
        knownAuthorOrder.append(signingKey)
        if knownAuthorOrder.count > ProtocolLimits.maxKnownJournalAuthors, let oldest = knownAuthorOrder.popFirst() {
            knownAuthors.remove(oldest)
        }
        guard let waiting = deferredAnnounces[.stranger], waiting.contains(where: { $0.author == signingKey }) else {
            return
        }
        let kept = waiting.filter { $0.author != signingKey }
        deferredAnnounces[.stranger] = kept.isEmpty ? nil : kept
        let own = deferredAnnounces[.member(signingKey)] ?? []
        let moved = waiting.filter { $0.author == signingKey }
        let room = max(0, ProtocolLimits.maxDeferredAnnouncesPerAuthor - own.count)
        announcesRefused += max(0, moved.count - room)
        deferredAnnounces[.member(signingKey)] = own + moved.prefix(room)
        admitWaiting(in: .member(signingKey), now: now)
    }

    /// The share `manifest` counts against.
    func bucket(for manifest: AttachmentManifest) -> AuthorBucket {
        knownAuthors.contains(manifest.author) ? .member(manifest.author) : .stranger
    }

    /// Whether `manifest` fits its share (``ProtocolLimits/maxJournalAttachmentsPerAuthor``,
    /// ``ProtocolLimits/maxJournalBytesPerAuthor``) next to what the journal already has there.
    func fitsAuthorBound(_ manifest: AttachmentManifest) -> Bool {
        let usage = authorUsage[bucket(for: manifest)] ?? AuthorUsage()
        return usage.count < ProtocolLimits.maxJournalAttachmentsPerAuthor
            && usage.bytes + manifest.size <= ProtocolLimits.maxJournalBytesPerAuthor
    }

    /// The error a local add over the author's bound gets.
    func authorBoundError(_ manifest: AttachmentManifest) -> JournalError {
        let usage = authorUsage[bucket(for: manifest)] ?? AuthorUsage()
        if usage.count >= ProtocolLimits.maxJournalAttachmentsPerAuthor {
            return .limitExceeded(
                what: JournalError.attachmentsByOneAuthor, limit: ProtocolLimits.maxJournalAttachmentsPerAuthor)
        }
        return .limitExceeded(
            what: JournalError.bytesByOneAuthor, limit: Int(ProtocolLimits.maxJournalBytesPerAuthor))
    }

    /// Counts a newly known attachment against its share (remembered, so it is released from the same share).
    mutating func countAuthor(_ manifest: AttachmentManifest) {
        let bucket = bucket(for: manifest)
        countedIn[manifest.id] = bucket
        authorUsage[bucket, default: AuthorUsage()].count += 1
        authorUsage[bucket, default: AuthorUsage()].bytes += manifest.size
    }

    /// Releases a dropped attachment's share, then admits the announcements that waited for room there.
    mutating func uncountAuthor(_ manifest: AttachmentManifest, now: Instant) {
        guard let bucket = countedIn.removeValue(forKey: manifest.id) else { return }
        if var usage = authorUsage[bucket] {
            usage.count -= 1
            usage.bytes -= manifest.size
            authorUsage[bucket] = usage.count > 0 ? usage : nil
        }
        admitWaiting(in: bucket, now: now)
    }

    /// Admits, in the order they came, the announcements waiting in `bucket` that fit now; one that does not fit (a
    /// large one) does not hold back smaller ones behind it. Those admitted or removed meanwhile leave the line.
    mutating func admitWaiting(in bucket: AuthorBucket, now: Instant) {
        guard let waiting = deferredAnnounces[bucket] else { return }
        var kept: [AttachmentManifest] = []
        var admitted: [AttachmentManifest] = []
        var usage = authorUsage[bucket] ?? AuthorUsage()
        var total = attachments.count
        for manifest in waiting where attachments[manifest.id] == nil && !tombstoneSet.contains(manifest.id) {
            if usage.count < ProtocolLimits.maxJournalAttachmentsPerAuthor
                && usage.bytes + manifest.size <= ProtocolLimits.maxJournalBytesPerAuthor
                && total < ProtocolLimits.maxJournalAttachments
            {
                admitted.append(manifest)
                usage.count += 1
                usage.bytes += manifest.size
                total += 1
            } else {
                kept.append(manifest)
            }
        }
        deferredAnnounces[bucket] = kept.isEmpty ? nil : kept
        for manifest in admitted { admit(manifest, from: nil, now: now) }
    }

    /// Keeps an ANNOUNCE over its share's bound until removals make room: an honest author never goes over its
    /// bound, but its REMOVE of an older attachment may arrive after the ANNOUNCE of a newer one (they can travel
    /// different paths). Up to ``ProtocolLimits/maxDeferredAnnouncesPerAuthor`` wait per share; more are refused.
    mutating func deferAnnounce(_ manifest: AttachmentManifest) {
        let bucket = bucket(for: manifest)
        var waiting = deferredAnnounces[bucket] ?? []
        guard !waiting.contains(where: { $0.id == manifest.id }) else { return }
        guard waiting.count < ProtocolLimits.maxDeferredAnnouncesPerAuthor else {
            announcesRefused += 1
            return
        }
        waiting.append(manifest)
        deferredAnnounces[bucket] = waiting
    }

    /// Forgets a waiting announcement that was removed (or admitted) before its turn.
    mutating func forgetDeferred(_ id: AttachmentID) {
        for (bucket, waiting) in deferredAnnounces where waiting.contains(where: { $0.id == id }) {
            let kept = waiting.filter { $0.id != id }
            deferredAnnounces[bucket] = kept.isEmpty ? nil : kept
        }
    }

    /// Announcements waiting for room in their author's share, over all shares.
    public var deferredAnnounceCount: Int { deferredAnnounces.values.reduce(0) { $0 + $1.count } }
}
