import HuddleProtocol

extension ProtocolLimits {
    /// The largest attachment: 100 MiB = 104,857,600 bytes. A larger manifest is refused before anything is allocated
    /// for it.
    public static let maxAttachmentSize: UInt64 = 104_857_600
    /// The most chunks an attachment has: ceil(``maxAttachmentSize`` / 64 KiB) = 1,600.
    public static let maxAttachmentChunks = Int(
        (maxAttachmentSize + UInt64(MerkleTree.chunkSize) - 1) / UInt64(MerkleTree.chunkSize))
    /// The largest application metadata a manifest carries: 16 KiB.
    public static let maxAttachmentMetadataBytes = 16 * 1024
    /// Attachments (held, downloading or queued) one journal knows at once: 1,024. An ANNOUNCE beyond it is refused
    /// and counted (its sender may only have forwarded it); a local add beyond it is refused with an error.
    public static let maxJournalAttachments = 1024
    /// Attachments one author (by manifest signing key) has in a journal at once: 128, so one member cannot take the
    /// whole journal (and every member's disk) for itself. Keys this node never saw as a member's share one such
    /// bound (``maxKnownJournalAuthors``), so fresh keys do not multiply it. A local add beyond it is refused with an error; an
    /// ANNOUNCE beyond it waits (``maxDeferredAnnouncesPerAuthor``) for the author's removals.
    public static let maxJournalAttachmentsPerAuthor = 128
    /// Bytes of attachments one author has in a journal at once: 1 GiB (ten attachments of the largest size).
    public static let maxJournalBytesPerAuthor: UInt64 = 1 << 30
    /// ANNOUNCEs over their author's bound kept until the author's REMOVEs make room: 16 per author. An honest
    /// author never exceeds its bound, but its REMOVE of an older attachment may arrive after the ANNOUNCE of a newer
    /// one; beyond 16 waiting, further ANNOUNCEs of that author are refused and counted.
    public static let maxDeferredAnnouncesPerAuthor = 16
    /// Signing keys a journal remembers as members' (so their attachments count against their own bound; the
    /// attachments of every other key share one bound as strangers'): 1,024, the oldest forgotten first.
    public static let maxKnownJournalAuthors = 1024
    /// Removed attachment ids remembered so a late ANNOUNCE cannot revive them: 1,024 (oldest forgotten first).
    public static let maxJournalTombstones = 1024
    /// Downloads running at once: 16. Further attachments wait in a queue, in the order they were announced.
    public static let maxConcurrentDownloads = 16
    /// Chunk requests outstanding to one peer, over all attachments: 8 (512 KiB, enough to fill a path of
    /// several MB/s at tens of milliseconds of RTT while leaving the other holders their share).
    public static let maxChunkRequestsPerPeer = 8
    /// Chunk requests outstanding over all peers and attachments: 64 (4 MiB in flight).
    public static let maxChunkRequestsInFlight = 64
    /// Leaf hashes in one LEAVES message: 512 (16 KiB), so the leaf list of a 100 MiB attachment is 4 pieces.
    public static let maxLeavesPerMessage = 512
    /// Ranges in one HAVE message: 1,600 (one per chunk, the worst fragmentation).
    public static let maxHaveRanges = maxAttachmentChunks
    /// Bad chunks (leaf hash mismatch) after which a holder is avoided for that attachment: 3.
    public static let maxBadChunksPerHolder = 3
    /// Chunk reads for one peer the store has not answered yet: 64. More requests from that peer are a protocol
    /// violation (an honest peer keeps at most ``maxChunkRequestsPerPeer`` outstanding, plus timed-out ones).
    public static let maxPendingServesPerPeer = 64
    /// The largest journal message: a CHUNK (64 KiB of data plus its header) or a full HAVE.
    public static let maxJournalMessageBytes = MerkleTree.chunkSize + 64
}

extension ProtocolLimits {
    /// How long a chunk request may stay unanswered before it is given to another holder: 10 s. The holder keeps
    /// its other requests; it is asked again only after the others.
    public static let chunkRequestTimeout = Duration.seconds(10)
    /// How long a LEAVES request may stay unanswered before the leaf list is asked of another holder: 10 s.
    public static let leavesRequestTimeout = Duration.seconds(10)
    /// A running download that verified nothing for this long while others wait gives up its slot and goes to the
    /// back of the queue, its verified chunks kept: 120 s.
    public static let downloadStallTimeout = Duration.seconds(120)
}
